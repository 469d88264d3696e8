"""The call keeper: a small process that makes the turns' model calls on behalf of the
workers (``llm.keeper``), so that an answer in flight survives the worker that asked for
it; the turn's next delivery finds it saved, or still in flight and waits for it
(``core.agent.keeper_client``).

A keeper reads the calls of ``keys.llm_calls`` through the consumer group ``keepers``
(shared by every keeper of the deployment), makes up to ``llm.keeper_concurrency`` at
once through the gateway (``wiring.build_llm``: the same retries and time-outs as a
worker's), and ends each in one script: the answer saved where the turn looks for it
(``core.agent.responses``) or the error kept under the call's id, the in-flight mark
removed, the requesting process told; then the entry is acknowledged and deleted, with
the mark if it still stands (the end lost in a failover that kept this).

A keeper keeps the calls it is making fresh in the group (XCLAIM, several times per
``llm.keeper_claim_idle_s``), so a call idle longer than that was left by a dead keeper:
any keeper takes it over (XAUTOCLAIM) and makes it — unless its answer was saved before
that keeper died. A call whose mark is gone or names another call has nobody waiting for
it: dropped without asking the model. ``keys.llm_keepers`` is the keepers' heartbeat:
without it, workers call the model themselves. Its Redis commands are the state room's
(``core.state.keeper_channel``).

Run with ``caramba keeper`` (``core.process.keeper_main``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid

from core.agent import responses
from core.agent.calls import deadline_s
from core.agent.keeper_client import (
    OUTCOME,
    Answered,
    Failed,
    KeptCall,
    Outcome,
    TimedOut,
    call_ttl_s,
)
from core.config import Settings
from core.errors import LLMError
from core.llm.base import LLM
from core.state.client import Client, StateError
from core.state.keeper_channel import KeeperChannel
from core.state.keys import Keys

log = logging.getLogger(__name__)

_BLOCK_MS = 1000
_BATCH = 100
_HEARTBEAT_TTL_MS = 5000
_FORGET_CONSUMERS_S = 3600.0  # a consumer with nothing pending, idle this long, is removed


class Keeper:
    """One keeper: serves calls until told to stop, then finishes those under way."""

    def __init__(self, settings: Settings, llm: LLM, redis: Client, *, name: str = "") -> None:
        self.settings, self.llm = settings, llm
        self.keys = Keys(settings.redis.key_prefix)
        self.channel = KeeperChannel(redis, self.keys)
        self.name = name or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.concurrency = settings.llm.keeper_concurrency
        self.claim_idle_ms = int(settings.llm.keeper_claim_idle_s * 1000)
        self.deadline_s = deadline_s(settings.llm)
        self.asked = 0  # model calls made (for logs and tests)
        self._running: dict[str, asyncio.Task[None]] = {}
        self._forgot_at = 0.0

    async def run(self, stop: asyncio.Event) -> None:
        """Serve calls until ``stop`` is set, then wait for those under way (cancel the
        task to abandon them: another keeper takes them over)."""
        await self.channel.create_group()
        # Ready means the workers hand their calls to it: its heartbeat is on before it
        # says so (a call asked before the upkeep's first beat went to the model directly).
        await self.channel.beat(self.name, _HEARTBEAT_TTL_MS)
        upkeep = asyncio.create_task(self._upkeep(stop), name="keeper-upkeep")
        log.info("call keeper %s ready.", self.name)
        try:
            while not stop.is_set():
                await self._read()
            await self._leave()
            if self._running:
                log.info("call keeper %s: finishing %d calls", self.name, len(self._running))
                await asyncio.gather(*self._running.values(), return_exceptions=True)
        finally:
            upkeep.cancel()
            for task in self._running.values():
                task.cancel()
            await asyncio.gather(upkeep, *self._running.values(), return_exceptions=True)
        log.info("call keeper %s stopped (%d model calls made)", self.name, self.asked)

    async def _read(self) -> None:
        free = self.concurrency - len(self._running)
        if free <= 0:
            running = list(self._running.values())
            await asyncio.wait(
                running, timeout=_BLOCK_MS / 1000, return_when=asyncio.FIRST_COMPLETED
            )
            return
        try:
            got = await self.channel.read(self.name, min(free, _BATCH), _BLOCK_MS)
        except (StateError, OSError) as exc:
            log.warning("call keeper: reading calls failed (%s); again in 1 s", exc)
            await asyncio.sleep(1)
            return
        for entry_id, fields in got:
            self._start(entry_id, fields)

    def _start(self, entry_id: str, fields: dict[str, str]) -> None:
        if entry_id in self._running:
            return
        task = asyncio.create_task(self._serve(entry_id, fields), name=f"kept-call-{entry_id}")
        self._running[entry_id] = task
        task.add_done_callback(lambda _: self._running.pop(entry_id, None))

    async def _serve(self, entry_id: str, fields: dict[str, str]) -> None:
        try:
            try:
                call = KeptCall.parse(fields)
            except (KeyError, ValueError) as exc:
                log.error("call keeper: dropping malformed call %s (%s)", entry_id, exc)
                await self.channel.done(entry_id)
                return
            outcome = await self._outcome(call)
            if outcome is not None:
                await self._end(call, outcome)
            # Its mark removed here too if it still stands: the end above lost in a
            # failover (replicas_to_ack 0) and this kept, the turn asks again at once.
            request = call.request
            await self.channel.done(
                entry_id, (request.run_id, request.agent_id, call.seq, call.mark)
            )
        except (StateError, OSError) as exc:
            # Left pending: taken over (by this keeper too) once idle; a saved answer is
            # not asked for again.
            log.warning("call keeper: call %s not ended (%s); it will be taken over", entry_id, exc)

    async def _outcome(self, call: KeptCall) -> Outcome | None:
        request = call.request
        raw_saved, mark = await self.channel.in_flight(request.run_id, request.agent_id, call.seq)
        saved = responses.parse(raw_saved)
        if saved is not None and saved.fingerprint == call.fingerprint:
            return Answered(response=saved.response)  # a keeper died after saving it
        if mark != call.mark:
            log.info("call keeper: nobody waits for call %s any more; dropped", call.call_id)
            return None
        self.asked += 1
        try:
            async with asyncio.timeout(self.deadline_s):
                return Answered(response=await self.llm.complete(request))
        except LLMError as exc:
            return Failed.of(exc)
        except TimeoutError:
            detail = f"the model did not answer within {self.deadline_s:.0f} s (with retries)"
            return TimedOut(detail=detail)
        except Exception as exc:
            log.exception("call keeper: call %s failed", call.call_id)
            message = f"the call keeper could not call the model: {exc!r}"
            return Failed(message=message, model=request.model)

    async def _end(self, call: KeptCall, outcome: Outcome) -> None:
        request = call.request
        answered = isinstance(outcome, Answered)
        saved = responses.dump(request, outcome.response) if isinstance(outcome, Answered) else ""
        kept = "" if answered else OUTCOME.dump_json(outcome).decode()
        ttl_s = int(call_ttl_s(self.settings.llm))
        ends = (saved, responses.TTL_S, kept, ttl_s, call.mark, call.reply_to)
        await self.channel.finish(
            request.run_id, request.agent_id, call.seq, call.call_id, ends=ends
        )

    async def _upkeep(self, stop: asyncio.Event) -> None:
        """The heartbeat, the calls under way kept fresh, a dead keeper's calls taken
        over, long-gone keepers forgotten."""
        interval = min(1.0, self.claim_idle_ms / 3000)
        while True:
            try:
                if not stop.is_set():
                    await self.channel.beat(self.name, _HEARTBEAT_TTL_MS)
                if self._running:
                    await self.channel.refresh(self.name, list(self._running))
                if not stop.is_set():
                    await self._take_over()
                    await self._forget_consumers()
            except (StateError, OSError) as exc:
                log.warning("call keeper: upkeep failed (%s); again in %.1f s", exc, interval)
            await asyncio.sleep(interval)

    async def _take_over(self) -> None:
        free = self.concurrency - len(self._running)
        if free <= 0:
            return
        for entry_id, fields in await self.channel.take_over(self.name, self.claim_idle_ms, free):
            if fields and entry_id not in self._running:
                log.warning("call keeper: took over call %s (its keeper stopped)", entry_id)
                self._start(entry_id, fields)

    async def _forget_consumers(self) -> None:
        now = time.monotonic()
        if now - self._forgot_at < 60:
            return
        self._forgot_at = now
        await self.channel.forget_consumers(self.name, _FORGET_CONSUMERS_S * 1000)

    async def _leave(self) -> None:
        """Stopping: workers stop handing calls to this keeper (another's heartbeat, if
        any, is back within a second)."""
        try:
            await self.channel.leave(self.name)
        except (StateError, OSError):
            pass
