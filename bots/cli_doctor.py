"""``caramba doctor`` (registered on the command line's app by :mod:`bots.cli`): run the
checks of :mod:`core.process.doctor` and print them so that they read at 80 columns —
one line per check, long lines wrapped at word boundaries, what to do under its check."""

from __future__ import annotations

import asyncio
import logging

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from bots.cli_common import console, settings_or_exit
from bots.console.text import printable
from core.process.doctor_types import Check, Level

_COLOUR = {Level.OK: "green", Level.WARN: "yellow", Level.FAIL: "red"}
# The check's name takes at most this many columns; its detail wraps beside it.
_NAME_WIDTH = 14
# Their warnings (an unpriced model, a server that did not start) are in the checks
# already; printed as log lines they would break the table at any width.
_QUIET = ("core", "LiteLLM", "mcp", "httpx")


def doctor() -> None:
    """Check the configuration and services; say exactly what to set or start."""
    from core.process.doctor import run_checks

    settings = settings_or_exit()
    loggers = [logging.getLogger(name) for name in _QUIET]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        checks = asyncio.run(run_checks(settings))
    finally:  # the same process may go on (tests, a caller of doctor())
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
    print_checks(checks, console)
    if any(c.level is Level.FAIL for c in checks):
        raise typer.Exit(1)


def print_checks(checks: list[Check], out: Console) -> None:
    """The checks as a borderless table of status, name and detail (the fix beneath the
    detail, after an arrow); rich wraps each cell at word boundaries to ``out``'s width."""
    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 1, 0, 0))
    table.add_column("status", no_wrap=True)
    table.add_column("check", max_width=_NAME_WIDTH, overflow="fold")
    table.add_column("detail", overflow="fold", ratio=1)
    for c in checks:
        detail = Text(printable(c.detail))
        if c.fix:
            detail.append("\n→ " + printable(c.fix), style="dim")
        status = Text(f"{c.level.value:<4}", style=_COLOUR[c.level])
        table.add_row(status, Text(printable(c.name), style="bold"), detail)
    out.print(table)
