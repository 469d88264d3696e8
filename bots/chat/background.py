"""Work a chat bot does after a listener answered the platform (acknowledge fast, then
plan, fetch files, post): tasks kept until they end, their errors logged, never lost."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)


class Background:
    """The listeners' background tasks of one bot (``name`` for the log)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.tasks: set[asyncio.Task[None]] = set()

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` now, beside the listener that returns; its error is logged."""

        async def guarded() -> None:
            try:
                await work
            except Exception:
                log.exception("%s background work failed", self.name)

        task = asyncio.create_task(guarded())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def drain(self) -> None:
        """Wait for the work spawned so far and for what it spawns in turn (not for the
        relays: they last as long as runs)."""
        while self.tasks:
            await asyncio.gather(*list(self.tasks), return_exceptions=True)
