"""One reader for the event streams of many runs.

A chat adapter shows every run it started, from the request to the result. Following
each with its own blocking XREAD would hold one Redis connection per run (a pool of 100
runs out with hundreds of runs in flight); the hub reads all of them with one blocking
XREAD over every followed stream and hands each run's events to its follower.

Part of the state room; it reads through the store's event log (``store.events``) and
speaks no Redis command of its own.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field

from pydantic import ValidationError

from core.errors import UsageError
from core.state.store import Store
from core.types.events import RUN_EVENT, RunEvent, RunFinished

log = logging.getLogger(__name__)
_RETRY_S = 1.0


@dataclass
class _Follower:
    key: str
    last: str
    queue: asyncio.Queue[tuple[str, RunEvent]] = field(default_factory=asyncio.Queue)


class EventHub:
    """Follows runs' events with one reader task; start it by following a run.

    ``block_ms`` bounds how late a newly followed run joins the blocking read (its
    events written meanwhile are not lost: reading starts after ``after``).
    """

    def __init__(
        self, store: Store, *, blocking: bool = True, block_ms: int = 250, count: int = 100
    ) -> None:
        self._store = store
        # fakeredis answers blocking reads at once: poll instead.
        self._block: int | None = block_ms if blocking else None
        self._poll_s = 0.05
        self._count = count
        self._followers: dict[str, _Follower] = {}
        self._wanted = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None

    @property
    def following(self) -> list[str]:
        return list(self._followers)

    async def follow(
        self, run_id: str, after: str = "0-0"
    ) -> AsyncGenerator[tuple[str, RunEvent], None]:
        """Yield ``(stream id, event)`` of the run after ``after``, up to ``run_finished``."""
        if run_id in self._followers:
            raise UsageError(f"run {run_id} is already followed", hint="follow a run once")
        follower = _Follower(self._store.keys.events(run_id), after)
        self._followers[run_id] = follower
        self._wanted.set()
        if self._reader is None or self._reader.done():
            self._reader = asyncio.create_task(self._read(), name="caramba-event-hub")
        try:
            while True:
                entry_id, event = await follower.queue.get()
                yield entry_id, event
                if isinstance(event, RunFinished):
                    return
        finally:
            # Only this follower: one closed late must not stop its run's next follower.
            if self._followers.get(run_id) is follower:
                del self._followers[run_id]

    async def aclose(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
            self._reader = None

    async def _read(self) -> None:
        events = self._store.events
        while True:
            if not self._followers:
                self._wanted.clear()
                await self._wanted.wait()
                continue
            streams = {f.key: f.last for f in self._followers.values()}
            try:
                reply = await events.read_many(streams, self._count, self._block)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("reading run events failed; retrying in %.0f s", _RETRY_S)
                await asyncio.sleep(_RETRY_S)
                continue
            by_key = {f.key: f for f in self._followers.values()}
            for stream, entries in reply or ():
                follower = by_key.get(stream)
                if follower is None:
                    continue  # stopped following while the read was under way
                for entry_id, fields in entries:
                    follower.last = entry_id
                    try:
                        event = RUN_EVENT.validate_json(fields["event"])
                    except (ValidationError, KeyError):
                        log.warning("skipping an unreadable event %s in %s", entry_id, stream)
                        continue
                    follower.queue.put_nowait((entry_id, event))
            if not reply and self._block is None:
                await asyncio.sleep(self._poll_s)


async def follow_events(
    store: Store,
    run_id: str,
    *,
    blocking: bool = True,
    poll_s: float = 0.05,
    timeout_s: float | None = None,
) -> AsyncIterator[RunEvent]:
    """Yield one run's events in order until its ``run_finished`` event (or time-out)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    last = "0-0"
    # fakeredis answers blocking reads at once; poll with a short sleep instead.
    block = 1000 if blocking else None
    while True:
        batch = await store.events.read(run_id, after=last, block_ms=block)
        for entry_id, event in batch:
            last = entry_id
            yield event
            if isinstance(event, RunFinished):
                return
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"run {run_id} did not finish within {timeout_s} s")
        if not batch and block is None:
            await asyncio.sleep(poll_s)
