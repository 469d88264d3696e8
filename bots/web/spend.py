"""The spend page (``/spend``): a month's spend as the ledger holds it
(``core.runs.spend.report``) — the total, the budgets and how much of each is used, a
chart per day (:mod:`bots.web.spend_chart`), and tables per channel, workspace, person
and model. ``?month=2026-11`` picks the month (default this one, UTC); ``?channel=`` or
``?team=`` narrows it to a channel's or a workspace's key. Like the runs list, it needs
an operator's link unless the request comes straight from this machine
(:mod:`bots.web.guard`). Every name is escaped (the template autoescapes)."""

from __future__ import annotations

import calendar
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from bots.web.guard import NEEDS_OPERATOR
from bots.web.spend_chart import day_chart
from core.runs import spend as spending
from core.services import Services
from core.types.spend import MONTH_PATTERN, BudgetUse, SpendReport, SpendTotal

BAD_MONTH = "The month is written like 2026-11 (a year and a month)."
UNREADABLE = "The spend ledger could not be read just now; try again in a moment."
NO_LEDGER = "The spend page is not served by this process (it has no spend ledger)."
log = logging.getLogger(__name__)
# A place key as the ledger writes it: letters, digits and a few separators, bounded.
_KEY = re.compile(r"^[\w.:@#-]{1,200}$")


class SpendSource(Protocol):
    """Where the page reads a month's report (``core.runs.spend.report`` over the
    process's services)."""

    def __call__(
        self, *, month: str, team_key: str | None, channel_key: str | None
    ) -> Awaitable[SpendReport]: ...


Page = Callable[..., Response]


def ledger_source(svc: Services) -> SpendSource:
    """The spend ledger of ``svc`` as the page's source."""

    async def source(*, month: str, team_key: str | None, channel_key: str | None) -> SpendReport:
        return await spending.report(svc, month=month, team_key=team_key, channel_key=channel_key)

    return source


@dataclass(frozen=True)
class SpendView:
    """What ``spend.html`` shows."""

    report: SpendReport
    month: str
    title: str
    previous: str
    next: str
    chart: Markup
    narrowed: str
    # The largest lines of each table shown ([web_ui] spend_lines_shown).
    shown: int = 200

    @property
    def tables(self) -> list[tuple[str, str, str, tuple[SpendTotal, ...], int]]:
        """(id, heading, first column's name, lines shown, lines left out) of each
        table: the largest ``shown`` lines."""
        r, n = self.report, self.shown
        return [
            (id_, heading, column, lines[:n], max(len(lines) - n, 0))
            for id_, heading, column, lines in (
                ("by-channel", "Per channel", "Channel", r.by_channel),
                ("by-team", "Per workspace", "Workspace", r.by_team),
                ("by-person", "Per person", "Person", r.by_person),
                ("by-model", "Per model", "Model", r.by_model),
            )
        ]

    @property
    def budgets(self) -> tuple[BudgetUse, ...]:
        return self.report.budgets


def this_month(now: float | None = None) -> str:
    return time.strftime("%Y-%m", time.gmtime(time.time() if now is None else now))


def shift(month: str, by: int) -> str:
    """``2026-11`` moved ``by`` months (``2026-12`` for 1, ``2026-10`` for -1)."""
    year, m = (int(p) for p in month.split("-"))
    index = year * 12 + (m - 1) + by
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def month_title(month: str) -> str:
    year, m = (int(p) for p in month.split("-"))
    return f"{calendar.month_name[m]} {year}"


def month_days(report: SpendReport) -> list[tuple[str, float]]:
    """Every day of the report's month with its cost (0 for a day without spend)."""
    year, m = (int(p) for p in report.month.split("-"))
    spent = {d.key: d.cost_usd for d in report.by_day}
    days = calendar.monthrange(year, m)[1]
    return [
        (f"{report.month}-{d:02d}", spent.get(f"{report.month}-{d:02d}", 0.0))
        for d in range(1, days + 1)
    ]


def spend_view(report: SpendReport, shown: int = 200) -> SpendView:
    title = month_title(report.month)
    narrowed = ""
    if report.channel_key:
        found = next((c for c in report.by_channel if c.key == report.channel_key), None)
        narrowed = found.name if found else report.channel_key
    elif report.team_key:
        found = next((t for t in report.by_team if t.key == report.team_key), None)
        narrowed = found.name if found else report.team_key
    where = f" in {narrowed}" if narrowed else ""
    return SpendView(
        report=report,
        month=report.month,
        title=title,
        previous=shift(report.month, -1),
        next=shift(report.month, 1),
        chart=day_chart(month_days(report), f"Spend per day{where}, {title}"),
        narrowed=narrowed,
        shown=shown,
    )


def spend_routes(
    source: SpendSource | None, allowed: Callable[[Request], bool], page: Page, shown: int
) -> list[tuple[str, Callable[[Request], Awaitable[Response]], list[str]]]:
    """``/spend`` for the app (``allowed``: whether the request may see everything;
    ``shown``: the largest lines of each table shown)."""

    async def spend(request: Request) -> Response:
        if not allowed(request):
            return PlainTextResponse(NEEDS_OPERATOR, status_code=403)
        if source is None:
            return PlainTextResponse(NO_LEDGER, status_code=404)
        q = request.query_params
        month = q.get("month") or this_month()
        if not re.match(MONTH_PATTERN, month):
            return PlainTextResponse(BAD_MONTH, status_code=400)
        channel, team = q.get("channel") or None, q.get("team") or None
        if any(k is not None and not _KEY.match(k) for k in (channel, team)):
            return PlainTextResponse("There is no such channel or workspace.", status_code=400)
        try:
            report = await source(month=month, team_key=team, channel_key=channel)
        except Exception as exc:
            log.exception("reading the spend ledger for %s failed", month)
            said = f"{UNREADABLE} ({type(exc).__name__})"
            return PlainTextResponse(said, status_code=503)
        context: dict[str, Any] = {"view": spend_view(report, shown), "t": q.get("t") or ""}
        return page("spend.html", nav=True, **context)

    return [("/spend", spend, ["GET"])]


__all__ = [
    "SpendSource",
    "SpendView",
    "ledger_source",
    "month_days",
    "shift",
    "spend_routes",
    "spend_view",
]
