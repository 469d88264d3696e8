"""What the ``caramba`` commands share: the console, settings read or a clear exit, Redis
and the model's key checked before a command starts, a service run until it stops with its
errors said in one line, and ``--debug`` (a traceback only for a person who asks for one)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Coroutine
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

from bots.console.text import escape
from core.config import Settings, load_settings
from core.errors import CarambaError, ConfigError
from core.process import event_loop

if TYPE_CHECKING:
    from core.services import Services

console = Console()


class Debug:
    """``caramba --debug``: tracebacks are shown instead of one line."""

    on = False


def settings_or_exit(**overrides: object) -> Settings:
    """The settings (config.toml, CARAMBA_* variables, ``overrides``); a configuration
    error is said and the command exits with 2."""
    try:
        return load_settings(**overrides)  # type: ignore[arg-type]
    except CarambaError as exc:
        raise configuration_error(exc) from None


def configuration_error(exc: CarambaError) -> typer.Exit:
    """Say ``exc`` (a missing secret, a bad setting) and exit with 2."""
    console.print(f"[bold red]configuration error:[/] {escape(str(exc))}", highlight=False)
    return typer.Exit(2)


def redis_or_exit(settings: Settings) -> None:
    """Outside embedded mode, a Redis that does not answer is said in one line (where it
    was tried, what to do) and the command exits with 2 — before anything starts."""
    if settings.redis.embedded:
        return
    from core.state.reach import redis_problem

    problem = asyncio.run(redis_problem(settings.redis))
    if problem is not None:
        raise configuration_error(problem)


def keys_or_exit(settings: Settings) -> None:
    """A configured model whose API key is not in the environment is said in one line
    (the variable to export) and the command exits with 2, before litellm is imported."""
    from core.llm.setup import check_keys

    problem = check_keys(settings)
    if problem is not None:
        raise configuration_error(problem)


def say_unexpected(exc: BaseException) -> int:
    """``exc`` in one line (an exception nobody expected says to run with ``--debug`` for
    its traceback); the exit code: 2 for a configuration error, else 1."""
    if isinstance(exc, CarambaError):
        kind = "configuration error" if isinstance(exc, ConfigError) else "error"
        console.print(f"[bold red]{kind}:[/] {escape(str(exc))}", highlight=False)
        return 2 if isinstance(exc, ConfigError) else 1
    text = " ".join(str(exc).split())
    text = text if len(text) <= 300 else text[:300] + "…"
    what = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    console.print(
        f"[bold red]error:[/] {escape(what)} [dim](run with --debug for the details)[/]",
        highlight=False,
    )
    return 1


def serve(service: Coroutine[Any, Any, None], settings: Settings) -> None:
    """Run a long-lived service (a bot, the web server) until it stops, on the event loop
    ``scheduler.event_loop`` chooses; its error, if it ends with one, is said in a line and
    the command exits with 1."""
    logging.getLogger("bots").setLevel(logging.INFO)
    try:
        event_loop.run(service, settings.scheduler.event_loop)
    except CarambaError as exc:
        raise typer.Exit(say_unexpected(exc)) from None


@contextlib.asynccontextmanager
async def store_services(settings: Settings) -> AsyncIterator[Services]:
    """Services for a command that reads and changes what Redis keeps (schedules, the
    spend ledger): no scheduler started, no model built. Imported when used, so that
    ``caramba`` starts without redis."""
    from core.llm.scripted import ScriptedModel
    from core.process.wiring import build_services
    from core.scheduler.inline import InlineScheduler

    svc = build_services(settings, InlineScheduler(1), llm=ScriptedModel())
    try:
        yield svc
    finally:
        await svc.aclose()
