"""Embedded mode: one process runs everything (inline scheduler; fakeredis or a Redis).

With the in-process Redis, the library's entries are kept in a file between processes
(``embedded_library.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from core.config import Settings
from core.library import Library
from core.llm.base import LLM
from core.process.background import run_background
from core.process.embedded_library import load_library, records_path, save_library
from core.process.heap import freeze_startup_objects
from core.process.jobs import handle
from core.process.tools_start import start_tools, stop_tools
from core.process.wiring import build_llm, build_services
from core.runs import learning, people
from core.runs.approval import Approve, Decision, ProposalView, view
from core.runs.control import propose_run, start_run
from core.runs.outcomes import Done, Refused
from core.scheduler.inline import InlineScheduler
from core.services import Services
from core.state.event_hub import follow_events
from core.state.turn_ahead_wake import WakeStarts
from core.types.agent import AgentSpec
from core.types.cohort import Cohort
from core.types.events import RunEvent
from core.types.people import Person
from core.types.run import RunState

log = logging.getLogger(__name__)

EventCallback = Callable[[RunEvent], Awaitable[None] | None]
# Shows the proposal to a person and returns their decision.
Decider = Callable[[ProposalView], Awaitable[Decision]]
# Who requests and decides in this process when the caller names nobody.
CONSOLE = Person("console", "console")


@contextlib.asynccontextmanager
async def embedded_services(settings: Settings, llm: LLM | None = None) -> AsyncIterator[Services]:
    """Services with the inline scheduler and the background loop running in this process."""
    scheduler = InlineScheduler(settings.scheduler.inline_concurrency)
    # The model called directly: turns run here, not on workers beside a call keeper.
    svc = build_services(settings, scheduler, llm=llm if llm is not None else build_llm(settings))
    if settings.redis.embedded:  # the library's entries and names outlive the process
        await load_library(settings, svc.store)
    await start_tools(svc)
    # The bus's and the roles' templates compiled here, not inside the first turns.
    svc.prompts.warm(settings.prompts.roles.values())
    # A save that wakes one agent starts its turn too, when a slot is free to run it.
    starts = WakeStarts(scheduler.free)
    scheduler.start(lambda job: starts.run(job, lambda: handle(svc, job)))
    # What start-up made lives as long as the services: out of the collector's walks.
    freeze_startup_objects()
    stop = asyncio.Event()
    # Its work that can wait is held back while the scheduler runs turns.
    background = asyncio.create_task(
        run_background(svc, stop, scheduler), name="caramba-background"
    )
    try:
        yield svc
    finally:
        stop.set()
        await background
        await scheduler.stop()
        await starts.discard()
        await stop_tools(svc)
        if settings.redis.embedded:
            await _keep_library(settings, svc)
        await svc.aclose()


async def _keep_library(settings: Settings, svc: Services) -> None:
    try:
        await save_library(settings, svc.store)
    except Exception:  # the run's outcome is shown already; say why the library is not kept
        log.exception("keeping the library's entries in %s failed", records_path(settings))


async def follow(
    svc: Services, run_id: str, on_event: EventCallback | None, timeout_s: float | None
) -> RunState:
    limit = timeout_s if timeout_s is not None else svc.settings.limits.wall_clock_s + 60
    blocking = not svc.settings.redis.embedded
    async for event in follow_events(svc.store, run_id, blocking=blocking, timeout_s=limit):
        if on_event is not None:
            maybe = on_event(event)
            if maybe is not None:
                await maybe
    return await svc.store.get_run(run_id)


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
    async with embedded_services(settings, llm) as svc:
        run_id = await start_run(svc, task, root, requested_by=requested_by)
        return await follow(svc, run_id, on_event, timeout_s)


async def run_proposal(
    svc: Services,
    task: str,
    proposal: AgentSpec | Cohort,
    ask: Decider,
    *,
    on_event: EventCallback | None = None,
    on_message: Callable[[str], None] = print,
    person: Person = CONSOLE,
    timeout_s: float | None = None,
    library: Library | None = None,
    max_rounds: int = 20,
    follow_run: Callable[[str], Awaitable[RunState]] | None = None,
) -> RunState:
    """Propose ``person``'s task, let ``ask`` decide (edits loop back to the card)
    through the people room (``people.decide``: its line names ``person``), then run if
    approved (followed by ``follow_run`` if given: the console's, which takes the
    person's input meanwhile).

    ``decide`` records the decision in the library; with a ``library``, the run's outcome
    is recorded in it too before this returns.
    """
    run_id = await propose_run(svc, task, proposal, requested_by=person.id)
    for _ in range(max_rounds):
        run = await svc.store.get_run(run_id)
        decision = await ask(view(svc.settings, run, svc.tools))
        outcome = await people.decide(svc, run_id, person, decision)
        on_message(outcome.reason if isinstance(outcome, Refused) else outcome.line)
        if isinstance(outcome, Done) and isinstance(decision, Approve):
            final = await (
                follow_run(run_id)
                if follow_run is not None
                else follow(svc, run_id, on_event, timeout_s)
            )
            if library is not None:
                # Recorded now (or by the worker already recording it), not at the next tick.
                await learning.learn(svc, run_id, library, wait_s=10)
            return final
        if outcome.run is not None and outcome.run.status.terminal:
            return outcome.run
    return await svc.store.get_run(run_id)
