"""The ``caramba`` command line: demo, run, worker, keeper, doctor, tools; the chat bots and
the web server (slack, discord, web) are in :mod:`bots.cli_chat`."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

import typer

from bots.cli_chat import discord, slack, web
from bots.cli_common import (
    Debug,
    configuration_error,
    console,
    keys_or_exit,
    redis_or_exit,
    say_unexpected,
    settings_or_exit,
)
from bots.cli_demo import demo
from bots.cli_doctor import doctor
from bots.cli_schedule import schedule
from bots.cli_spend import spend
from bots.cli_tools import tools
from bots.console.text import escape
from core.errors import CarambaError
from core.process import event_loop

if TYPE_CHECKING:
    from core.types.run import RunState

app = typer.Typer(
    help="Caramba: a team of LLM agents for your chat.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="markdown",
)
_settings = settings_or_exit
log = logging.getLogger("bots.cli")


@app.callback()
def options(
    debug: bool = typer.Option(
        False, "--debug", help="Show the traceback of an error instead of one line."
    ),
) -> None:
    """Caramba: a team of LLM agents for your chat."""
    Debug.on = debug


app.command()(demo)  # first in the help, as the way to start


@app.command()
def run(
    task: str = typer.Argument(..., help="What you want done."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show every turn."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Approve the proposal without asking."),
    cohort: str = typer.Option("", "--cohort", help="Run the library cohort saved under NAME."),
) -> None:
    """Run TASK: the router answers it directly or a planner proposes a cohort to approve.

    While it runs: type an answer when an agent asks, c (or Ctrl-C) to cancel, e or s
    when it pauses at its budget; what is typed before anything is asked is kept for
    the next question."""
    settings = _settings()
    # Before the imports of a run (a second or more): Redis and the key, said at once.
    redis_or_exit(settings)
    keys_or_exit(settings)
    from bots.console.lines import StdinLines
    from bots.console.logs import FileLogs
    from bots.console.run import run_task
    from bots.console.session import Interrupted
    from bots.console.thread import ConsoleThread

    logs = FileLogs(settings.workspace_dir.parent / "console.log").start()
    if settings.redis.embedded:
        console.print(
            "[dim]redis.url is not set: embedded mode (in-process Redis; the library is "
            f"kept in {escape(str(settings.resolve(settings.library.index_dir)))}).[/]"
        )
    thread = ConsoleThread(console, verbose=verbose, hint="c + Enter: cancel")

    async def go() -> RunState:
        lines = StdinLines().start()
        try:
            return await run_task(
                settings, console, task, thread, lines, logs, yes=yes, cohort=cohort
            )
        finally:
            lines.close()
            thread.close()

    try:
        result = event_loop.run(go(), settings.scheduler.event_loop)
    except Interrupted:
        console.print("[yellow]Quit at once; the run stopped with this process.[/]")
        raise typer.Exit(130) from None
    except CarambaError as exc:
        raise typer.Exit(say_unexpected(exc)) from None
    except Exception:
        log.exception("caramba run stopped on an unexpected error")  # into console.log
        raise
    finally:
        logs.stop()
        if logs.warnings:
            console.print(f"[dim]{logs.warnings} warnings logged to {escape(str(logs.path))}[/]")
    if result.status.value != "completed":
        raise typer.Exit(1)


@app.command()
def worker(
    processes: int | None = typer.Option(
        None,
        "--processes",
        "-p",
        min=0,
        help="Worker processes (default celery.processes; 0 = one per core).",
    ),
    concurrency: int | None = typer.Option(
        None,
        "--concurrency",
        "-c",
        min=1,
        help="Turn slots (threads) per process (default celery.concurrency).",
    ),
    loglevel: str = typer.Option("info", "--loglevel", "-l", help="debug, info, warning, error."),
    keeper: bool = typer.Option(
        True,
        "--keeper/--no-keeper",
        help="With llm.keeper on (the default): run this host's call keeper beside the "
        "workers, so a model call in flight outlives a killed worker (--no-keeper: it runs "
        "elsewhere, e.g. `caramba keeper` as its own service).",
    ),
) -> None:
    """Run agent turns for production mode: Celery workers on the Redis of redis.url
    and the host's call keeper (llm.keeper, on by default)."""
    import os

    # The supervisor only starts and watches processes: no Celery here.
    from tasks.production import configure_logging, require_redis
    from tasks.supervisor import Supervisor, keeper_command, worker_command

    settings = _settings()
    try:
        require_redis(settings)
    except CarambaError as exc:
        raise configuration_error(exc) from None
    redis_or_exit(settings)
    count = processes if processes is not None else settings.celery.processes
    count = count or os.cpu_count() or 1
    slots = concurrency or settings.celery.concurrency
    configure_logging(loglevel)
    # With llm.keeper on, the host's call keeper runs beside the workers, supervised too.
    keeps = settings.llm.keeper and keeper
    if count == 1 and not keeps:
        from tasks.worker import run_worker

        raise typer.Exit(run_worker(settings, concurrency=slots, loglevel=loglevel))
    supervisor = Supervisor(
        count,
        lambda i: worker_command(i, concurrency=slots, loglevel=loglevel),
        keeper=keeper_command(loglevel=loglevel) if keeps else None,
    )
    raise typer.Exit(supervisor.run())


@app.command()
def keeper(
    loglevel: str = typer.Option("info", "--loglevel", "-l", help="debug, info, warning, error."),
) -> None:
    """Make the workers' model calls (llm.keeper): an answer in flight outlives a worker
    that dies. One per host, beside `caramba worker`."""
    from core.process.keeper_main import configure_logging, serve

    settings = _settings()
    redis_or_exit(settings)
    configure_logging(loglevel)
    try:
        event_loop.run(serve(settings), settings.scheduler.event_loop)
    except CarambaError as exc:
        raise configuration_error(exc) from None


for command in (doctor, slack, discord, web, spend, tools):
    app.command()(command)
app.add_typer(schedule, name="schedule")


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        if Debug.on:
            raise
        sys.exit(say_unexpected(exc))


if __name__ == "__main__":
    main()
