"""What the ``caramba`` commands share: the console, settings read or a clear exit, and a
service run until it stops with its errors said in one line."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

import typer
from rich.console import Console

from core.config import Settings, load_settings
from core.errors import CarambaError

console = Console()


def settings_or_exit(**overrides: object) -> Settings:
    """The settings (config.toml, CARAMBA_* variables, ``overrides``); a configuration
    error is said and the command exits with 2."""
    try:
        return load_settings(**overrides)  # type: ignore[arg-type]
    except CarambaError as exc:
        console.print(f"[bold red]configuration error:[/] {exc}")
        raise typer.Exit(2) from None


def configuration_error(exc: CarambaError) -> typer.Exit:
    """Say ``exc`` (a missing secret, a bad setting) and exit with 2."""
    console.print(f"[bold red]configuration error:[/] {exc}")
    return typer.Exit(2)


def serve(service: Coroutine[Any, Any, None]) -> None:
    """Run a long-lived service (a bot, the web server) until it stops; its error, if it
    ends with one, is said in a line and the command exits with 1."""
    logging.getLogger("bots").setLevel(logging.INFO)
    try:
        asyncio.run(service)
    except CarambaError as exc:
        console.print(f"[bold red]error:[/] {exc}")
        raise typer.Exit(1) from None
