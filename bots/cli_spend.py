"""``caramba spend`` (registered on the command line's app by :mod:`bots.cli`): a month's
spend from the ledger (``core.runs.spend.report``) as rich tables — by channel,
workspace, person, model and day, the budgets with their owners — and the total, which
is the sum of the ended runs' costs (each run counted once, in the UTC month it ended).
Runs not ended yet are said apart ("under way")."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

from bots.cli_common import (
    configuration_error,
    console,
    redis_or_exit,
    settings_or_exit,
    store_services,
)
from bots.console.text import escape
from core.errors import ConfigError
from core.types.spend import SpendReport, SpendTotal

if TYPE_CHECKING:
    from core.services import Services


def money(usd: float) -> str:
    """Exact to a hundredth of a cent: the total must read as the runs' sum."""
    return f"${usd:,.4f}"


async def spend_report(
    svc: Services, month: str | None, channel: str | None, team: str | None
) -> SpendReport:
    """The report, ``channel`` a place key (``slack:T0ACME:C0OPS``) or a channel's name as
    people read it (``#ops``)."""
    from core.runs.spend_report import report

    if channel and ":" not in channel:
        every = await report(svc, month=month, team_key=team)
        wanted = channel.lstrip("#").casefold()
        found = [t.key for t in every.by_channel if t.name.lstrip("#").casefold() == wanted]
        channel = found[0] if found else channel
    return await report(svc, month=month, team_key=team, channel_key=channel)


def print_report(made: SpendReport, out: Console) -> None:
    """The report as tables, then the total."""
    where = made.channel_key or made.team_key or "every channel"
    out.print(f"[bold]Spend in {made.month}[/] ({escape(where)})", highlight=False)
    for title, totals in (
        ("Channel", made.by_channel),
        ("Workspace", made.by_team),
        ("Person", made.by_person),
        ("Model", made.by_model),
        ("Day", made.by_day),
    ):
        if totals:
            out.print(_table(title, totals, made.total_usd))
    if made.budgets:
        table = Table(title="Budgets", title_justify="left")
        for column in ("Place", "Scope", "Month", "Spent", "Share", "Owner"):
            table.add_column(column, justify="right" if column in ("Month", "Spent") else "left")
        for use in made.budgets:
            b = use.budget
            table.add_row(
                escape(b.place_name or b.place_key),
                b.scope,
                money(b.month_usd),
                money(use.spent_usd),
                f"{use.share:.0%}",
                escape(b.owner_name or b.owner_id or "—"),
            )
        out.print(table)
    runs = made.runs
    more = f", {made.rows_left_out} rows not listed" if made.rows_left_out else ""
    out.print(f"[bold]Total: {money(made.total_usd)}[/] ({runs} runs ended{more})", highlight=False)
    if made.under_way_usd:
        out.print(f"Under way (runs not ended yet): {money(made.under_way_usd)}", highlight=False)


def _table(title: str, totals: Sequence[SpendTotal], total: float) -> Table:
    table = Table(title=f"By {title.lower()}", title_justify="left")
    table.add_column(title)
    table.add_column("Cost", justify="right")
    table.add_column("Share", justify="right")
    for t in totals:
        share = t.cost_usd / total if total else 0.0
        table.add_row(escape(t.name), money(t.cost_usd), f"{share:.0%}")
    return table


def spend(
    month: str | None = typer.Option(
        None, "--month", "-m", help="A UTC month like 2026-11 (default: this month)."
    ),
    channel: str | None = typer.Option(
        None, "--channel", "-c", help="A channel: its name (#ops) or key (slack:T0ACME:C0OPS)."
    ),
    team: str | None = typer.Option(
        None, "--team", "-t", help="A workspace or guild key (slack:T0ACME)."
    ),
) -> None:
    """Show a month's spend per channel, workspace, person, model and day, with budgets."""
    settings = settings_or_exit()
    redis_or_exit(settings)
    if settings.redis.embedded:
        console.print(
            "[yellow]No redis.url: the ledger lives in a shared Redis (set CARAMBA_REDIS__URL).[/]"
        )
        raise typer.Exit(2)

    async def shown() -> SpendReport:
        async with store_services(settings) as svc:
            return await spend_report(svc, month, channel, team)

    try:
        made = asyncio.run(shown())
    except ValueError as exc:
        raise configuration_error(ConfigError(str(exc))) from None
    print_report(made, console)
