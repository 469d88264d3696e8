"""``caramba demo``: the offline demo — a request routed, planned, proposed, approved and
done by a team of agents (or one agent, ``--solo``; agents creating agents, ``--cohort``),
with a scripted model and an in-process Redis. At a terminal the person approves; piped,
everything is approved automatically."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

import typer

from bots.cli_common import console, settings_or_exit
from bots.console.text import escape
from core.process import event_loop

if TYPE_CHECKING:
    from bots.console.thread import ConsoleThread
    from core.config import Settings
    from core.runs.approval import Decision, ProposalView
    from core.types.approvals import Choice
    from core.types.events import ApprovalAsked
    from core.types.run import RunState

DemoRun = Coroutine[Any, Any, "RunState"]


def demo(
    task: str | None = typer.Argument(
        None,
        help="What to ask the demo (default: budget a team offsite). A simple question is "
        "answered directly; anything else gets a team shaped from its words.",
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show every turn."),
    solo: bool = typer.Option(False, "--solo", help="One agent and its tools, no planning."),
    cohort: bool = typer.Option(False, "--cohort", help="Agents creating agents at run time."),
    pace: float | None = typer.Option(
        None,
        "--pace",
        min=0,
        help="Seconds each scripted model answer takes, so you can watch the agents work "
        "(default: 1 at a terminal, 0 when the output is not a terminal).",
    ),
) -> None:
    """Run the offline demo: a request routed, planned, proposed, approved and done by a
    team of agents over the bus. Zero services; a scripted model answers every call."""
    from bots.console.thread import ConsoleThread

    settings = settings_or_exit(redis={"url": ""})
    console.print(
        "[bold yellow]Offline demo[/] — the LLM is the [bold]scripted offline "
        "model[/] (no provider is called); Redis is in-process (fakeredis)."
    )
    thread = ConsoleThread(console, verbose=verbose)
    pace_s = pace if pace is not None else (1.0 if sys.stdout.isatty() else 0.0)
    if solo or cohort:
        demo_run = _embedded(settings, thread, pace_s, cohort=cohort)
    else:
        demo_run = _team(settings, thread, pace_s, task)
    try:
        run = event_loop.run(demo_run, settings.scheduler.event_loop)
    finally:
        thread.close()
    if run.status.value == "rejected":
        return
    # The team's own demo task calls tools: a run of it that called none went wrong.
    untooled = task is None and not (solo or cohort) and thread.tools_called == 0
    if run.status.value != "completed" or untooled:
        raise typer.Exit(1)


def _embedded(settings: Settings, thread: ConsoleThread, pace_s: float, *, cohort: bool) -> DemoRun:
    """One agent and its tools (``--solo``), or agents creating agents (``--cohort``),
    on their own demo task."""
    from core.process.demo import DEMO_TASK, demo_agent, demo_model
    from core.process.demo_cohort import COHORT_TASK, cohort_model, cohort_orchestrator
    from core.process.embedded import run_embedded

    task, root, model = (
        (COHORT_TASK, cohort_orchestrator(), cohort_model())
        if cohort
        else (DEMO_TASK, demo_agent(), demo_model())
    )
    model.pace_s = pace_s
    return run_embedded(settings, task, root, llm=model, on_event=thread, timeout_s=60)


def _team(settings: Settings, thread: ConsoleThread, pace_s: float, task: str | None) -> DemoRun:
    """``task`` (default: the team's offsite) routed, planned, proposed and approved."""
    from bots.console.person import console_person
    from core.process.demo_flow import run_demo
    from core.process.demo_team import TEAM_TASK as TEAM

    say = lambda m: console.print(f"[dim]{escape(m)}[/]")  # noqa: E731
    return run_demo(
        settings,
        _ask,
        on_event=thread,
        on_message=say,
        person=console_person(),
        pace_s=pace_s,
        task=task or TEAM,
        decide_action=_decide_action,
    )


async def _ask(view: ProposalView) -> Decision:
    """The proposal: asked at a terminal, else approved automatically."""
    from bots.console import proposal
    from core.runs.approval import Approve

    if sys.stdin.isatty():
        return await asyncio.to_thread(proposal.ask, console, view)
    console.print(proposal.card(view))
    console.print("[bold green]✓ approved automatically[/] (not a terminal)")
    return Approve()


async def _decide_action(event: ApprovalAsked) -> tuple[Choice, str]:
    """A tool call waiting for approval: asked at a terminal, else approved once."""
    from bots.console import tool_approvals

    if sys.stdin.isatty():
        return await asyncio.to_thread(tool_approvals.ask, console)
    console.print("  [bold green]✓ approved once automatically[/] (not a terminal)")
    return "once", ""
