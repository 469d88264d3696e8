"""The spend page's chart (bots/web/spend_chart.py): bars' heights proportional to the
days' costs, every label escaped, titled for screen readers, and a month without spend
said in plain words instead of an empty chart."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

import pytest

from bots.web.spend_chart import EMPTY, PLOT_H, bars, day_chart

SVG = "{http://www.w3.org/2000/svg}"


def month(*usd: float) -> list[tuple[str, float]]:
    return [(f"2026-11-{i + 1:02d}", v) for i, v in enumerate(usd)]


def test_heights_are_proportional_to_cost() -> None:
    drawn = bars(month(0.5, 2.0, 0.0, 1.0))
    assert [b.height for b in drawn] == pytest.approx([PLOT_H / 4, PLOT_H, 0.0, PLOT_H / 2])
    # Bars stand on the same base line, left to right, none overlapping.
    assert len({round(b.y + b.height, 2) for b in drawn}) == 1
    assert all(a.x + a.width < b.x for a, b in itertools.pairwise(drawn))


def test_the_svg_is_well_formed_titled_and_holds_each_day() -> None:
    svg = str(day_chart(month(0.004, 3.25, 0.0), "Spend per day, November 2026"))
    root = ET.fromstring(svg)
    assert root.get("role") == "img"
    assert root.findtext(f"{SVG}title") == "Spend per day, November 2026"
    assert "the highest day is 2026-11-02 with $3.25" in (root.findtext(f"{SVG}desc") or "")
    rects = root.findall(f"{SVG}rect")
    assert [r.findtext(f"{SVG}title") for r in rects] == [
        "2026-11-01: $0.004",
        "2026-11-02: $3.25",
        "2026-11-03: $0",
    ]
    heights = [float(r.get("height") or "nan") for r in rects]
    assert heights[1] == PLOT_H and heights[2] == 0
    assert heights[0] == pytest.approx(PLOT_H * 0.004 / 3.25, abs=0.01)


def test_names_are_escaped() -> None:
    evil = '<script>alert(1)</script>" onload="x'
    svg = str(day_chart([(evil, 1.0)], evil))
    assert "<script>" not in svg and 'onload="x' not in svg
    root = ET.fromstring(svg)
    assert root.findtext(f"{SVG}title") == evil


@pytest.mark.parametrize("days", [[], month(0, 0, 0)])
def test_an_empty_month_says_so(days: list[tuple[str, float]]) -> None:
    html = str(day_chart(days, "Spend per day"))
    assert "<svg" not in html
    assert EMPTY in html and EMPTY == "No spend this month."
    assert bars(days) == [] if not days else all(b.height == 0 for b in bars(days))
