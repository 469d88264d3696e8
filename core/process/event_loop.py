"""The event loop a turn-running process runs on (``scheduler.event_loop``).

A turn is mostly event-loop work between two round trips: futures, callbacks, socket
reads and writes. uvloop does that work in C (libuv) where asyncio's own loop does it in
Python: on ``bench/throughput.py`` a worker spends about 12 % less CPU per turn on it, with
the same code above it (redis-py, aiohttp, Celery's hand-over). ``"auto"`` takes uvloop
where it is installed (a dependency on every platform but Windows) and asyncio's loop
elsewhere; ``"uvloop"`` insists on it, ``"asyncio"`` keeps the standard library's.

Used by the worker's loop thread (``tasks.loop``) and by the commands that run turns in
their own process (``caramba run``, the bots, the web chat); a library embedding Caramba
in a loop of its own keeps that loop.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable, Coroutine
from typing import Any, Literal, TypeVar

T = TypeVar("T")

Choice = Literal["auto", "uvloop", "asyncio"]


class EventLoopUnavailable(RuntimeError):
    """``scheduler.event_loop`` names a loop that is not installed here."""


def loop_factory(choice: Choice = "auto") -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes a new event loop of the chosen kind."""
    if choice == "asyncio":
        return asyncio.new_event_loop
    try:
        uvloop = importlib.import_module("uvloop")
    except ImportError as exc:
        if choice == "uvloop":
            raise EventLoopUnavailable(
                'scheduler.event_loop is "uvloop" but uvloop is not installed here (it is '
                "not built for Windows): install it (pip install uvloop), or set "
                'scheduler.event_loop to "auto" to use asyncio\'s loop where it is missing'
            ) from exc
        return asyncio.new_event_loop
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """``"uvloop"`` or ``"asyncio"``: which kind ``loop`` is (for logs and benches)."""
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"


def run(main: Coroutine[Any, Any, T], choice: Choice = "auto") -> T:
    """``asyncio.run(main)`` on a new loop of the chosen kind."""
    with asyncio.Runner(loop_factory=loop_factory(choice)) as runner:
        return runner.run(main)
