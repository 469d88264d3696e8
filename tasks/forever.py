"""The long-lived loops of a worker process, kept alive: the background loop and the turn
ledger's two loops (:mod:`tasks.runtime`) run under :func:`forever`, which starts one
again whatever ended it (a Redis restart, a bug in one tick), and tick with :func:`every`,
where Redis being unavailable costs one log line per try. Both stop as soon as their
``stop`` event is set (:func:`wait`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from kombu.exceptions import OperationalError

from core.state.client import TimedOut, Unreachable

log = logging.getLogger(__name__)

# What a Redis (or broker) that is restarting raises.
UNAVAILABLE = (Unreachable, TimedOut, OperationalError, OSError)
_RESTART_DELAY_S = 1.0


async def every(
    stop: asyncio.Event, interval: float, name: str, tick: Callable[[], Awaitable[object]]
) -> None:
    """``await tick()`` every ``interval`` until ``stop``; Redis being unavailable costs one
    log line per try, and the next tick tries again."""
    while not stop.is_set():
        try:
            await tick()
        except UNAVAILABLE as exc:
            log.warning("%s: Redis unavailable (%r); again in %.1f s", name, exc, interval)
        except Exception:
            log.exception("%s failed; again in %.1f s", name, interval)
        await wait(stop, interval)


async def wait(stop: asyncio.Event, seconds: float) -> None:
    """Sleep ``seconds``, or less if ``stop`` is set meanwhile."""
    try:
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    except TimeoutError:
        pass


async def forever(
    name: str, run: Callable[[], Coroutine[Any, Any, None]], stop: asyncio.Event
) -> None:
    """Run ``run()`` until ``stop`` is set, starting it again if it ever raises: the loops
    of a worker process must outlive anything (a Redis restart, a bug in one tick)."""
    while not stop.is_set():
        try:
            await run()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s crashed; starting it again in %.0f s", name, _RESTART_DELAY_S)
        else:
            if stop.is_set():
                return
            log.error("%s ended by itself; starting it again in %.0f s", name, _RESTART_DELAY_S)
        await wait(stop, _RESTART_DELAY_S)
