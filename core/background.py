"""The background loop every turn-running process runs beside its turns."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from core import timers

if TYPE_CHECKING:
    from core.runtime import Services

log = logging.getLogger(__name__)


async def tick(svc: Services) -> None:
    """One pass: fire due timers, process intents nobody has processed yet, and record
    ended runs in the library."""
    from core.intents import process_pending
    from core.learning import learn_ended

    await timers.fire_due(svc)
    await process_pending(svc)
    await learn_ended(svc)


async def run_background(svc: Services, stop: asyncio.Event) -> None:
    """Tick every ``scheduler.background_interval_s`` until ``stop`` is set.

    A failing tick is logged and retried on the next one: the loop never dies.
    """
    interval = svc.settings.scheduler.background_interval_s
    while not stop.is_set():
        try:
            await tick(svc)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("background tick failed; retrying in %.1f s", interval)
        try:
            async with asyncio.timeout(interval):
                await stop.wait()
        except TimeoutError:
            pass
