"""The spend page's chart: a month's spend per day as plain SVG, drawn on the server.

No script is needed to read it: every bar carries a ``<title>`` (the day and its cost,
shown on hover and read by screen readers), the chart as a whole is an ``img`` with a
title and a description naming its highest day, and the axis says the scale. Colours
are presentation attributes (the page's CSP allows no inline style). A bar's height is
proportional to the day's cost, the highest day filling the plot. Every text is escaped
(a model name or a channel's name may be anyone's words)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

from core.types.figures import exact_cost

WIDTH = 720
HEIGHT = 220
# The plot's margins: left for the axis's scale, bottom for the days.
LEFT = 64
RIGHT = 8
TOP = 14
BOTTOM = 28
PLOT_H = HEIGHT - TOP - BOTTOM
BAR_FILL = "#7aa7e9"
AXIS = "#6b6b70"
GRID = "#e3e3e6"
EMPTY = "No spend this month."


@dataclass(frozen=True)
class Bar:
    """One day: its label (``2026-11-03``), its cost, where it is drawn."""

    day: str
    usd: float
    x: float
    y: float
    width: float
    height: float


def bars(days: Sequence[tuple[str, float]]) -> list[Bar]:
    """The bars of ``days`` (each ``(day, usd)``, in order): heights proportional to
    cost, the highest filling the plot; a day without spend has a bar of height 0."""
    top = max((usd for _, usd in days), default=0.0)
    if not days:
        return []
    slot = (WIDTH - LEFT - RIGHT) / len(days)
    width = max(slot * 0.8, 1.0)
    drawn = []
    for i, (day, usd) in enumerate(days):
        height = PLOT_H * max(usd, 0.0) / top if top > 0 else 0.0
        x = LEFT + i * slot + (slot - width) / 2
        drawn.append(
            Bar(
                day,
                usd,
                round(x, 2),
                round(TOP + PLOT_H - height, 2),
                round(width, 2),
                round(height, 2),
            )
        )
    return drawn


def day_chart(days: Sequence[tuple[str, float]], title: str) -> Markup:
    """The chart of ``days`` (each ``(day, usd)``) titled ``title``; a plain
    "No spend this month." when nothing was spent."""
    if not any(usd > 0 for _, usd in days):
        return Markup('<p class="muted spend-empty">{}</p>').format(EMPTY)
    drawn = bars(days)
    top = max(b.usd for b in drawn)
    highest = next(b for b in drawn if b.usd == top)
    total = sum(b.usd for b in drawn)
    desc = (
        f"{len(drawn)} days, {exact_cost(total)} in all; "
        f"the highest day is {highest.day} with {exact_cost(top)}."
    )
    e = escape
    parts = [
        f'<svg class="spend-chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" aria-labelledby="spend-chart-title '
        f'spend-chart-desc" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="spend-chart-title">{e(title)}</title>',
        f'<desc id="spend-chart-desc">{e(desc)}</desc>',
    ]
    base = TOP + PLOT_H
    for y, label in ((TOP, exact_cost(top)), (TOP + PLOT_H / 2, exact_cost(top / 2))):
        parts.append(
            f'<line x1="{LEFT}" y1="{y}" x2="{WIDTH - RIGHT}" y2="{y}" stroke="{GRID}"/>'
            f'<text x="{LEFT - 6}" y="{y + 4}" text-anchor="end" font-size="11" '
            f'fill="{AXIS}">{e(label)}</text>'
        )
    parts.append(
        f'<line x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}" stroke="{AXIS}"/>'
        f'<text x="{LEFT - 6}" y="{base + 4}" text-anchor="end" font-size="11" '
        f'fill="{AXIS}">$0</text>'
    )
    step = max(1, round(len(drawn) / 10))
    for i, b in enumerate(drawn):
        said = f"{b.day}: {exact_cost(b.usd)}"
        parts.append(
            f'<rect class="bar" x="{b.x}" y="{b.y}" width="{b.width}" height="{b.height}" '
            f'fill="{BAR_FILL}" data-day="{e(b.day)}" data-usd="{b.usd!r}">'
            f"<title>{e(said)}</title></rect>"
        )
        if i % step == 0:
            parts.append(
                f'<text x="{round(b.x + b.width / 2, 2)}" y="{base + 16}" '
                f'text-anchor="middle" font-size="11" fill="{AXIS}">'
                f"{e(b.day[-2:])}</text>"
            )
    parts.append("</svg>")
    return Markup("".join(parts))


__all__ = ["EMPTY", "Bar", "bars", "day_chart"]
