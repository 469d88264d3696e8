"""The call keeper's client: a turn's model call made by a keeper process
(``core.process.keeper``), so that an answer in flight outlives the worker that asked for
it (``llm.keeper``, on by default; the worker processes' turns only: embedded mode calls
the model directly, ``wiring.build_llm``).

A turn marks its call in flight under its agent and sequence number (``SET NX`` with a
TTL; the mark is ``<call id> <fingerprint>``), hands the request to the
``keys.llm_calls`` stream that the keepers read through one consumer group, and waits.
The keeper saves the answer where a turn saves it (``core.agent.responses``) or keeps the
error under the call's id, removes the mark, and tells the requesting process: one pub/sub
channel and one subscriber per process (not one blocking read per waiting turn, which
would take a pooled connection each); a slow poll is the safety net. A delivery of the
turn after its worker died finds the answer saved, or the same request still in flight
and waits for it (polling: the notice goes to the dead process). A call whose mark is gone
with no outcome (it expired, or a failover lost the keeper's end but not its
acknowledgement, which removes a mark left standing: ``KeeperChannel.done``) is asked
again.

With no keeper alive (no heartbeat), turns call the model directly, as without the
keeper, and the worker says so once a minute (``caramba worker`` starts the host's keeper
beside its workers). Planning calls always do: ``RememberingLLM`` saves theirs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Annotated, Literal, assert_never

from pydantic import Field, TypeAdapter

from core.agent import responses
from core.agent.calls import deadline_s
from core.config import LLMSettings
from core.errors import LLMError
from core.llm.base import LLM, LLMRequest, LLMResponse
from core.services import Services
from core.state.keeper_channel import KeeperChannel
from core.types._base import Frozen

log = logging.getLogger(__name__)

_OWN_POLL_S = 2.0  # our own calls: the notice is the fast path, this the safety net
_JOINED_POLL_S = 0.25  # a call another (dead) process asked for: nobody tells us
_SUBSCRIBE_WAIT_S = 1.0
_WARN_EVERY_S = 60.0


class Answered(Frozen):
    kind: Literal["answered"] = "answered"
    response: LLMResponse


class Failed(Frozen):
    """The gateway's ``LLMError``, whole (its message and fields)."""

    kind: Literal["failed"] = "failed"
    message: str
    model: str
    status: int | None = None
    attempts: int = 1
    retryable: bool = False

    @classmethod
    def of(cls, exc: LLMError) -> Failed:
        return cls(
            message=str(exc),
            model=exc.model,
            status=exc.status,
            attempts=exc.attempts,
            retryable=exc.retryable,
        )


class TimedOut(Frozen):
    kind: Literal["timed_out"] = "timed_out"
    detail: str


Outcome = Annotated[Answered | Failed | TimedOut, Field(discriminator="kind")]
OUTCOME: TypeAdapter[Outcome] = TypeAdapter(Outcome)


class KeptCallError(LLMError):
    """The ``LLMError`` a keeper met making the call, with the gateway's message."""

    def __init__(self, failed: Failed) -> None:
        super().__init__(
            failed.message,
            model=failed.model,
            status=failed.status,
            attempts=failed.attempts,
            retryable=failed.retryable,
        )
        self.args = (failed.message,)  # already worded by the gateway


def call_ttl_s(llm: LLMSettings) -> float:
    """How long a call may be in flight: the model's deadline, plus one takeover by
    another keeper, plus a margin. The mark and a kept error live this long."""
    return deadline_s(llm) + llm.keeper_claim_idle_s + 5


@dataclass(frozen=True)
class KeptCall:
    """One entry of the calls stream."""

    call_id: str
    seq: int
    mark: str  # the in-flight mark's value: "<call id> <fingerprint>"
    reply_to: str  # the requesting process's channel
    request: LLMRequest

    @property
    def fingerprint(self) -> str:
        return self.mark.partition(" ")[2]

    def fields(self) -> dict[str, str]:
        return {
            "call": self.call_id,
            "seq": str(self.seq),
            "mark": self.mark,
            "reply": self.reply_to,
            "request": self.request.model_dump_json(),
        }

    @classmethod
    def parse(cls, fields: dict[str, str]) -> KeptCall:
        return cls(
            call_id=fields["call"],
            seq=int(fields["seq"]),
            mark=fields["mark"],
            reply_to=fields["reply"],
            request=LLMRequest.model_validate_json(fields["request"]),
        )


def unwrap(outcome: Outcome) -> LLMResponse:
    """The answer, or the error the keeper met, raised here."""
    match outcome:
        case Answered():
            return outcome.response
        case Failed():
            raise KeptCallError(outcome)
        case TimedOut():
            raise TimeoutError(outcome.detail)
        case _:
            assert_never(outcome)


class KeptLLM:
    """The process's model, with its turns' calls made by the call keepers
    (``calls.TurnCaller``); any other call (planning) goes straight to ``inner``."""

    def __init__(self, inner: LLM, settings: LLMSettings) -> None:
        self.inner = inner
        self.settings = settings
        self._process = uuid.uuid4().hex[:12]
        self._waiting: dict[str, asyncio.Event] = {}
        self._listener: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()
        self._warned_at = 0.0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
        await self.inner.aclose()

    async def complete_turn(
        self, svc: Services, request: LLMRequest, seq: int
    ) -> tuple[LLMResponse, bool]:
        """The answer to turn ``seq``'s request and whether another delivery asked for it."""
        channel = svc.store.keeper
        run_id, agent_id = request.run_id, request.agent_id
        fp = responses.fingerprint(request)
        ttl_ms = int(call_ttl_s(self.settings) * 1000)
        async with asyncio.timeout(deadline_s(self.settings) + self.settings.keeper_claim_idle_s):
            while True:
                await self._listen(channel)
                call_id = uuid.uuid4().hex
                mark = f"{call_id} {fp}"
                call = KeptCall(
                    call_id, seq, mark, svc.store.keys.llm_replies(self._process), request
                )
                self._waiting[call_id] = asyncio.Event()
                try:
                    how, current = await channel.ask(
                        run_id, agent_id, seq, mark, ttl_ms, call.fields()
                    )
                    if how == "direct":
                        return await self._direct(svc, request, seq), False
                    # "joined": an earlier delivery's call of this very request is in
                    # flight (its notice goes to that process: polled); "asked": ours.
                    outcome = await self._wait(svc, request, seq, current)
                finally:
                    self._waiting.pop(call_id, None)
                if outcome is not None:
                    return unwrap(outcome), how == "joined"
                # Lost (its mark expired with no outcome): ask again.

    async def _direct(self, svc: Services, request: LLMRequest, seq: int) -> LLMResponse:
        """No keeper is alive: the call made here, its answer saved as a turn saves it."""
        self._warn_no_keeper()
        response = await self.inner.complete(request)
        await responses.save(svc, request, seq, response)
        return response

    async def _wait(
        self, svc: Services, request: LLMRequest, seq: int, mark: str
    ) -> Outcome | None:
        """The call's outcome once it has one; None if it is no longer in flight and has
        none (ask again)."""
        channel = svc.store.keeper
        call_id, _, fp = mark.partition(" ")
        notice = self._waiting.get(call_id)
        while True:
            if notice is None:
                await asyncio.sleep(_JOINED_POLL_S)
            else:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(_OWN_POLL_S):
                        await notice.wait()
                notice.clear()
            raw_saved, raw_result, current = await channel.look(
                request.run_id, request.agent_id, seq, call_id
            )
            saved = responses.parse(raw_saved)
            if saved is not None and saved.fingerprint == fp:
                return Answered(response=saved.response)
            if raw_result is not None:
                await channel.drop_result(request.run_id, call_id)
                return OUTCOME.validate_json(raw_result)
            if current != mark:
                return None

    async def _listen(self, channel: KeeperChannel) -> None:
        """Make sure this process listens for its calls' notices (one subscriber)."""
        if self._listener is None or self._listener.done():
            self._subscribed = asyncio.Event()
            self._listener = asyncio.create_task(self._run_listener(channel), name="keeper-replies")
        if not self._subscribed.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_SUBSCRIBE_WAIT_S):
                    await self._subscribed.wait()

    async def _run_listener(self, channel: KeeperChannel) -> None:
        def subscribed() -> None:
            self._subscribed.set()
            # bench/chaos_victims.py reads this line to tell whose calls are in flight.
            on = channel.keys.llm_replies(self._process)
            log.info("turns' calls go to the call keeper; notices on %s", on)

        while True:
            try:
                async for call_id in channel.notices(self._process, subscribed):
                    notice = self._waiting.get(call_id)
                    if notice is not None:
                        notice.set()
            except Exception as exc:
                # The polls carry on meanwhile; notices sent now are not needed.
                self._subscribed.clear()
                log.warning(
                    "listening for the call keeper's notices failed (%s); again in 1 s", exc
                )
                await asyncio.sleep(1)

    def _warn_no_keeper(self) -> None:
        now = time.monotonic()
        if now - self._warned_at >= _WARN_EVERY_S:
            self._warned_at = now
            log.warning(
                "llm.keeper is on but no call keeper is alive: turns call the model directly "
                "(start `caramba keeper`)"
            )
