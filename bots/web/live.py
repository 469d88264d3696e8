"""Live updates: every browser watching a run gets its new events, with one reader of the
events streams for the whole process (the ``EventHub``, as the chat bots use it).

The hub follows a run once; :class:`Live` fans each run's events out to the pages open on
it. A page joining later first reads what it missed from the stream (after the event its
HTML was rendered at), then takes the shared feed, skipping what it already had.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from core.state.event_hub import EventHub
from core.state.store import Store
from core.types.events import RunEvent, RunFinished

log = logging.getLogger(__name__)
Entry = tuple[str, RunEvent]
_END: Entry | None = None


def later(entry_id: str, than: str) -> bool:
    """Whether stream id ``entry_id`` comes after ``than`` ("ms-seq" ids)."""
    a, _, b = entry_id.partition("-")
    c, _, d = than.partition("-")
    return (int(a), int(b or 0)) > (int(c), int(d or 0))


@dataclass
class _Feed:
    task: asyncio.Task[None] | None = None
    pages: set[asyncio.Queue[Entry | None]] = field(default_factory=set)


class Live:
    """The process's fan-out of runs' events to the pages watching them."""

    def __init__(self, store: Store, *, blocking: bool = True) -> None:
        self._store = store
        self._hub = EventHub(store, blocking=blocking)
        self._feeds: dict[str, _Feed] = {}

    async def watch(self, run_id: str, after: str) -> AsyncGenerator[Entry, None]:
        """The run's events after stream id ``after``, up to its ``run_finished``."""
        queue: asyncio.Queue[Entry | None] = asyncio.Queue()
        feed = self._feeds.get(run_id)
        if feed is None:
            feed = self._feeds[run_id] = _Feed()
            feed.pages.add(queue)
            feed.task = asyncio.create_task(self._pump(run_id, after, feed), name=f"live-{run_id}")
        else:
            feed.pages.add(queue)
        seen = after
        try:
            # What the shared feed passed before this page joined.
            for entry_id, event in await self._store.read_events(run_id, after, count=1000):
                seen = entry_id
                yield entry_id, event
                if isinstance(event, RunFinished):
                    return
            while (item := await queue.get()) is not _END:
                assert item is not None
                entry_id, event = item
                if not later(entry_id, seen):
                    continue
                seen = entry_id
                yield entry_id, event
                if isinstance(event, RunFinished):
                    return
        finally:
            feed.pages.discard(queue)
            if not feed.pages and self._feeds.get(run_id) is feed:
                del self._feeds[run_id]
                if feed.task is not None:
                    feed.task.cancel()

    async def _pump(self, run_id: str, after: str, feed: _Feed) -> None:
        try:
            # aclosing: a cancelled pump stops following at once (the hub refuses to
            # follow a run twice), not when the generator is collected.
            following: Any = self._hub.follow(run_id, after)
            async with contextlib.aclosing(following) as events:
                async for entry in events:
                    for page in list(feed.pages):
                        page.put_nowait(entry)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("following run %s for the inspector failed", run_id)
        for page in list(feed.pages):
            page.put_nowait(_END)
        if self._feeds.get(run_id) is feed:
            del self._feeds[run_id]

    async def aclose(self) -> None:
        for feed in list(self._feeds.values()):
            if feed.task is not None:
                feed.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await feed.task
        self._feeds.clear()
        await self._hub.aclose()
