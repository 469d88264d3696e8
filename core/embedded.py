"""Embedded mode: one process runs everything (inline scheduler; fakeredis or a Redis)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from core.background import run_background
from core.config import Settings
from core.llm.base import LLM
from core.runs import follow_events, start_run
from core.runtime import build_services
from core.scheduler.inline import InlineScheduler
from core.turn import run_turn
from core.types.agent import AgentSpec
from core.types.events import RunEvent
from core.types.run import RunState

EventCallback = Callable[[RunEvent], Awaitable[None] | None]


async def run_embedded(
    settings: Settings,
    task: str,
    root: AgentSpec,
    *,
    llm: LLM | None = None,
    on_event: EventCallback | None = None,
    requested_by: str = "console",
    timeout_s: float | None = None,
) -> RunState:
    """Run ``task`` with ``root`` to the end in this process; return the final run state."""
    scheduler = InlineScheduler(settings.scheduler.inline_concurrency)
    svc = build_services(settings, scheduler, llm=llm)
    scheduler.start(lambda job: run_turn(svc, job))
    stop = asyncio.Event()
    background = asyncio.create_task(run_background(svc, stop), name="caramba-background")
    try:
        run_id = await start_run(svc, task, root, requested_by=requested_by)
        limit = timeout_s if timeout_s is not None else settings.limits.wall_clock_s + 60
        async for event in follow_events(svc, run_id, timeout_s=limit):
            if on_event is not None:
                maybe = on_event(event)
                if maybe is not None:
                    await maybe
        return await svc.store.get_run(run_id)
    finally:
        stop.set()
        await background
        await scheduler.stop()
        await svc.aclose()
