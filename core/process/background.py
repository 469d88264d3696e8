"""The background loop every turn-running process runs beside its turns: due timers,
intents nobody has processed yet, ended runs to record in the library."""

from __future__ import annotations

import asyncio
import logging
import time

from core.agent.wake import wake_agent
from core.effects.intents import process_pending
from core.effects.timers import TIMER, DeliverMessage, ExpireProposal, Timer
from core.runs import watchdog
from core.runs.control import expire_if_due
from core.runs.learning import learn_ended
from core.services import Services
from core.state.client import Unreachable
from core.types.messages import HumanReply

log = logging.getLogger(__name__)
_BATCH = 100


async def tick(svc: Services) -> None:
    """One pass: fire due timers, process intents nobody has processed yet, record ended
    runs in the library, and (every ``scheduler.watchdog_s``) end runs nothing can move
    on."""
    await fire_due(svc)
    await process_pending(svc)
    await learn_ended(svc)
    await watchdog.watch(svc)


async def fire_due(svc: Services, now: float | None = None) -> int:
    """Carry out every timer due by ``now``; returns how many this process fired."""
    timers = svc.store.timers
    fired = 0
    for raw in await timers.due(now if now is not None else time.time(), _BATCH):
        if not await timers.claim(raw):
            continue  # another process claimed it
        await _fire(svc, TIMER.validate_json(raw))
        fired += 1
    return fired


async def _fire(svc: Services, timer: Timer) -> None:
    if isinstance(timer, ExpireProposal):
        await expire_if_due(svc, timer.run_id)
        return
    if isinstance(timer, DeliverMessage):
        message = HumanReply(
            run_id=timer.run_id,
            sender=timer.author,
            recipient=timer.agent_id,
            body=timer.body,
            author=timer.author,
        )
        await svc.bus.deliver(timer.run_id, message)
    await wake_agent(svc, timer.run_id, timer.agent_id)


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
        except Unreachable as exc:
            # Redis is restarting or unreachable: one line per tick, not a traceback.
            log.warning("background tick: Redis unreachable (%s); retry in %.1f s", exc, interval)
        except Exception:
            log.exception("background tick failed; retrying in %.1f s", interval)
        try:
            async with asyncio.timeout(interval):
                await stop.wait()
        except TimeoutError:
            pass
