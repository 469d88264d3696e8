"""``caramba schedule add|list|pause|resume|edit|delete`` (registered on the command
line's app by :mod:`bots.cli`): schedules from a terminal, one call of
``core.runs.schedules`` each. The person at the terminal acts as an approver (they hold
the deployment's Redis); ``--place`` names the channel a schedule posts into
(``slack:T0ACME:C0OPS``; default: the console)."""

from __future__ import annotations

import asyncio
import contextlib
import getpass
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import typer

from bots.cli_common import console, redis_or_exit, settings_or_exit, store_services
from bots.console.text import escape
from core.runs.outcomes import Refused
from core.types.people import Person
from core.types.place import Place
from core.types.schedules import Changed, NotUnderstood, Scheduled

if TYPE_CHECKING:
    from core.services import Services

schedule = typer.Typer(
    help="Recurring runs in a channel (docs/schedules.md).", no_args_is_help=True
)
CONSOLE = "console:console:console"


def _place(key: str) -> Place:
    parts = key.split(":")
    if len(parts) != 3 or not all(parts):
        raise typer.BadParameter(f"“{key}” is not platform:workspace:channel (slack:T1:C1)")
    return Place(platform=parts[0], workspace=parts[1], channel=parts[2])


def _me() -> Person:
    name = getpass.getuser() or "console"
    return Person(id="console", name=name, approver=True)


Outcome = Scheduled | Changed | NotUnderstood | Refused


def _run(act: Callable[[Services], Awaitable[Outcome]]) -> None:
    settings = settings_or_exit()
    redis_or_exit(settings)

    async def go() -> Outcome:
        async with store_services(settings) as svc:
            return await act(svc)

    outcome = asyncio.run(go())
    if isinstance(outcome, Scheduled | Changed):
        console.print(f"{escape(outcome.line)} (id {outcome.schedule.id})", highlight=False)
        return
    said = outcome.hint if isinstance(outcome, NotUnderstood) else outcome.reason
    console.print(f"[bold red]not done:[/] {escape(said)}", highlight=False)
    raise typer.Exit(1)


@schedule.command("add")
def add(
    when: str = typer.Argument(..., help="“every weekday at 9:00” or cron “0 9 * * 1-5”."),
    task: str = typer.Argument("", help="What each run asks (default: the --from-run's task)."),
    budget: float | None = typer.Option(None, "--budget", "-b", help="USD per run."),
    tz: str | None = typer.Option(None, "--tz", help="A time zone such as Europe/Paris."),
    place: str = typer.Option(CONSOLE, "--place", "-p", help="platform:workspace:channel"),
    from_run: str | None = typer.Option(None, "--from-run", help="A finished run to repeat."),
) -> None:
    """Make a schedule."""
    from core.runs import schedules

    where = _place(place)
    _run(
        lambda svc: schedules.schedule(
            svc,
            _me(),
            where,
            task=task or None,
            from_run=from_run,
            when=when,
            tz=tz,
            budget_usd=budget,
        )
    )


@schedule.command("list")
def list_(
    place: str | None = typer.Option(None, "--place", "-p", help="Only this channel's."),
) -> None:
    """The schedules, the soonest first."""
    from core.runs import schedules

    settings = settings_or_exit()
    redis_or_exit(settings)
    where = _place(place) if place else None

    async def go() -> tuple[str, ...]:
        async with store_services(settings) as svc:
            listed = await schedules.listed(svc, where)
            return tuple(f"{s.id}  {s.place.key}  {s.shown()}" for s in listed.schedules)

    lines = asyncio.run(go())
    for line in lines or ("No schedules.",):
        console.print(escape(line), highlight=False)


@schedule.command("pause")
def pause(schedule_id: str) -> None:
    """Stop firing it until resumed."""
    from core.runs import schedules

    _run(lambda svc: schedules.pause(svc, schedule_id, _me()))


@schedule.command("resume")
def resume(schedule_id: str) -> None:
    """Fire it again from its next slot."""
    from core.runs import schedules

    _run(lambda svc: schedules.resume(svc, schedule_id, _me()))


@schedule.command("delete")
def delete(schedule_id: str) -> None:
    """Forget it."""
    from core.runs import schedules

    _run(lambda svc: schedules.delete(svc, schedule_id, _me()))


@schedule.command("edit")
def edit(
    schedule_id: str,
    when: str | None = typer.Option(None, "--when", help="New words or cron."),
    budget: float | None = typer.Option(None, "--budget", "-b", help="New USD per run."),
    task: str | None = typer.Option(None, "--task", help="New task."),
    tz: str | None = typer.Option(None, "--tz", help="New time zone."),
) -> None:
    """Change when, the budget, the task or the time zone (a new budget or task asks for
    approval again at the next run)."""
    from core.runs import schedules

    _run(
        lambda svc: schedules.edit(
            svc, schedule_id, _me(), when=when, budget_usd=budget, task=task, tz=tz
        )
    )


@schedule.command("watch")
def watch(
    approve: bool = typer.Option(
        False, "--approve", help="Approve firings whose cohort or budget changed."
    ),
) -> None:
    """Fire the schedules due (this process runs their turns, like a worker) and show
    the console's firings and results here, until Ctrl-C."""
    from bots.cli_common import keys_or_exit
    from bots.console.schedules import Watch
    from core.process import wiring
    from core.process.embedded import embedded_services

    settings = settings_or_exit()
    redis_or_exit(settings)
    keys_or_exit(settings)

    async def go() -> None:
        async with embedded_services(settings, wiring.build_llm(settings)) as svc:
            console.print("[dim]Watching schedules; Ctrl-C to stop.[/]")
            await Watch(svc, console, _me(), approve=approve).run(asyncio.Event())

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(go())
