"""Which worker bench/chaos.py kills, by the state it is in when the SIGKILL lands.

- ``idle``: a worker that announced it is ready and is idle: no Celery task received
  and not ended (from its log) and no model call at the keeper. Under load that is
  mostly a replacement worker that just came up and has not taken a message yet.
- ``running``: a worker with a model call outstanding — with the call keeper (the
  default) a call of its turns in the keeper's stream ``{prefix}:llm:calls`` (each
  call names its requester's notice channel, and each worker logs its channel once);
  without the keeper, a Celery task received and not yet ended (from its log).
- ``committing``: a worker right as a turn saves — with the keeper, the worker whose
  call the keeper has just ended (answer saved, the worker told: the entry leaves the
  stream), killed within a few ms of that, while the worker applies the answer (its
  tool calls, the save script); without the keeper, as ``running``.
- ``mixed`` (the default): each kill draws one of the three.
- a list such as ``running,committing``: the kills take its states in turn.
- ``ready``: any worker that announced it is ready, whatever it is doing (the bench's
  variant that issue 23 measured: with kills every 1–4 s and a worker taking 3–5 s to
  start, a crash loop that hits workers as they take their first turns, or with turns
  under way); ``any``: either worker, even one still starting (the first variant).

Each pick waits until a worker in that state exists, up to ``wait_s`` (the kill is then
missed: counted, and the chaos goes on with the next kill), or until the chaos ends.
Missed picks say the picker is blind (bench/chaos.py prints them; the chaos test fails):
what it reads is true in both ``celery.turn_dispatch`` modes — the worker's "ready." and
its "Task … received / succeeded …" lines (Celery's own with "thread", the same words from
tasks/dispatch.py with "loop"), its keeper client's "notices on …" line, and the keeper's
stream in Redis.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
from typing import Any

from redis.asyncio import Redis

from core.state.keys import Keys
from tests.integration.processes import Process

STATES = ("idle", "running", "committing")
MODES = ("mixed", *STATES, "ready", "any")
_CHANNEL = re.compile(r"notices on (\S+)")
_TASK = re.compile(r"Task [\w.]+\[([0-9a-f-]+)\] (\w+)")
_POLL_S = 0.05
_COMMIT_POLL_S = 0.002


def ready(proc: Process) -> bool:
    return proc.returncode is None and " ready." in proc.output()


def parse_mode(mode: str) -> str:
    """``mode`` if it is one of MODES or a comma-separated list of STATES (argparse's type)."""
    if mode in MODES or all(part in STATES for part in mode.split(",")):
        return mode
    raise argparse.ArgumentTypeError(
        f"not a victims mode: {mode!r} (one of {', '.join(MODES)} or a list of states)"
    )


def tasks_in_flight(proc: Process) -> int:
    """Celery tasks the worker received and has not ended (succeeded, raised, retried …):
    by each task id's last word (a retry comes back under the same id)."""
    last: dict[str, str] = {}
    for task_id, word in _TASK.findall(proc.output()):
        last[task_id] = word
    return sum(word == "received" for word in last.values())


class Victims:
    """Picks the worker (an index into ``slots``) to kill in a given state."""

    def __init__(
        self,
        redis: Redis,
        keys: Keys,
        slots: list[Process],
        keeper: bool,
        rng: random.Random,
        wait_s: float = 20.0,
    ) -> None:
        self.redis, self.keys, self.slots, self.keeper, self.rng = redis, keys, slots, keeper, rng
        self.wait_s = wait_s
        self._channels: dict[int, str] = {}  # id(process) → its notice channel
        self._drawn = 0

    def state(self, mode: str) -> str:
        """The state the next kill's victim is to be in."""
        if mode == "mixed":
            return self.rng.choice(STATES)
        states = mode.split(",")
        self._drawn += 1
        return states[(self._drawn - 1) % len(states)]

    async def pick(self, state: str, stop: asyncio.Event) -> int | None:
        """A worker in ``state``, waiting up to ``wait_s`` for one; None if the chaos ended
        meanwhile or none was found in time (then ``stop`` is not set: a missed pick)."""
        if state == "any":
            return self.rng.randrange(len(self.slots))
        try:
            async with asyncio.timeout(self.wait_s):
                return await self._wait_for(state, stop)
        except TimeoutError:
            return None

    async def _wait_for(self, state: str, stop: asyncio.Event) -> int | None:
        if state == "committing" and self.keeper:
            return await self._committing(stop)
        while not stop.is_set():
            busy = await self._busy()
            alive = [i for i, p in enumerate(self.slots) if ready(p)]
            if state == "ready":
                found = alive
            elif state == "idle":
                found = [i for i in alive if i not in busy and not tasks_in_flight(self.slots[i])]
            else:
                found = [i for i in alive if i in busy]
            if found:
                return found[self.rng.randrange(len(found))]
            await asyncio.sleep(_POLL_S)
        return None

    async def _busy(self) -> set[int]:
        if not self.keeper:
            return {i for i, p in enumerate(self.slots) if tasks_in_flight(p)}
        return set((await self._calls()).values())

    async def _calls(self) -> dict[str, int]:
        """The calls in the keeper's stream (in flight): call id → the worker that asked."""
        owners = self._owners()
        entries: Any = await self.redis.xrange(self.keys.llm_calls(), count=10_000)
        out: dict[str, int] = {}
        for _, fields in entries:
            worker = owners.get(fields.get("reply", ""))
            if worker is not None:
                out[fields["call"]] = worker
        return out

    def _owners(self) -> dict[str, int]:
        """Notice channel → index of the (current) worker that listens on it."""
        out: dict[str, int] = {}
        for i, proc in enumerate(self.slots):
            channel = self._channels.get(id(proc))
            if channel is None:
                found = _CHANNEL.findall(proc.output())
                if not found:
                    continue
                channel = self._channels[id(proc)] = found[-1]
            out[channel] = i
        return out

    async def _committing(self, stop: asyncio.Event) -> int | None:
        """The worker whose call just left the keeper's stream (answered, told)."""
        before = await self._calls()
        while not stop.is_set():
            await asyncio.sleep(_COMMIT_POLL_S)
            now = await self._calls()
            answered = [w for call, w in before.items() if call not in now]
            answered = [w for w in answered if self.slots[w].returncode is None]
            if answered:
                return answered[self.rng.randrange(len(answered))]
            before = now
        return None
