"""The spend page's guards and markup over HTTP (the app as ``caramba web`` serves it):
an operator's link or a request straight from this machine, a month written wrongly
refused in words, a process without a ledger says so, names people or agents chose
shown as text, the month's days all in the chart, the month picker's neighbours, and
the filters' values carried through. The page against the real ledger, in a browser:
tests/integration/test_web_spend_browser.py."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from typing import Any

import pytest
import redis

from bots.web.access import OPERATOR
from bots.web.app import create_app, secured
from bots.web.spend import shift
from core.types.spend import BudgetUse, ChannelBudget, SpendReport, SpendTotal
from tests.integration.test_web_inspector import EVIL, KEY, app_for, client

pytestmark = pytest.mark.integration


def report(month: str, team_key: str | None, channel_key: str | None) -> SpendReport:
    ch = "discord:1:2"
    return SpendReport(
        month=month,
        team_key=team_key,
        channel_key=channel_key,
        total_usd=3.5,
        by_channel=(SpendTotal(key=ch, name=f"#ops {EVIL}", cost_usd=3.5),),
        by_team=(SpendTotal(key="discord:1", name="Acme", cost_usd=3.5),),
        by_person=(
            SpendTotal(key="u1", name=f"Ana {EVIL}", cost_usd=3.0),
            SpendTotal(key="u2", name="Bo", cost_usd=0.5),
        ),
        by_model=(SpendTotal(key="gpt-x", name="gpt-x", cost_usd=3.5),),
        by_day=(
            SpendTotal(key=f"{month}-03", name=f"{month}-03", cost_usd=0.5),
            SpendTotal(key=f"{month}-09", name=f"{month}-09", cost_usd=3.0),
        ),
        budgets=(
            BudgetUse(
                budget=ChannelBudget(
                    place_key=ch, place_name="#ops", month_usd=4.0, owner_name=f"Oz {EVIL}"
                ),
                spent_usd=3.5,
            ),
        ),
    )


def spend_app(settings: Any, redis: Any, *, local: bool = True, ledger: bool = True) -> Any:
    asked: list[tuple[str, str | None, str | None]] = []

    async def source(*, month: str, team_key: str | None, channel_key: str | None) -> SpendReport:
        asked.append((month, team_key, channel_key))
        return report(month, team_key, channel_key)

    _, inspector = app_for(settings, redis, local=local)
    inspector = dataclasses.replace(inspector, spend=source if ledger else None)
    return secured(create_app(inspector)), asked


async def test_the_page_shows_the_report_as_text(settings, real_redis) -> None:
    app, asked = spend_app(settings, real_redis)
    async with client(app) as c:
        r = await c.get("/spend?month=2026-02&channel=discord:1:2")
    assert r.status_code == 200, r.text
    assert asked == [("2026-02", None, "discord:1:2")]
    html = r.text
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Spend, February 2026 in #ops" in html
    assert 'href="/spend?month=2026-01"' in html and 'href="/spend?month=2026-03"' in html
    assert 'name="channel" value="discord:1:2"' in html
    assert "$3.50" in html and "$4.00" in html and "88 %" in html
    start = html.index("<svg")
    svg = ET.fromstring(html[start : html.index("</svg>") + 6])
    rects = svg.findall("{http://www.w3.org/2000/svg}rect")
    assert len(rects) == 28  # every day of February 2026
    assert 'href="/spend"' in html and 'aria-label="Pages"' in html


async def test_guards(settings, real_redis) -> None:
    app, asked = spend_app(settings, real_redis, local=False)
    async with client(app) as c:
        assert (await c.get("/spend")).status_code == 403
        forged = await c.get("/spend?t=not-a-token")
        assert forged.status_code == 403
        run_token = KEY.token("run:run_x", 600)
        assert (await c.get(f"/spend?t={run_token}")).status_code == 403
        ok = await c.get(f"/spend?t={KEY.token(OPERATOR, 600)}")
        assert ok.status_code == 200
        # The nav and the month's links keep the operator's token.
        assert f"/spend?t={KEY.token(OPERATOR, 600)}"[:20] in ok.text
    assert len(asked) == 1
    app, asked = spend_app(settings, real_redis)
    async with client(app) as c:
        for bad in ("2026-13", "26-11", "2026-1", "<b>", "2026-11-01"):
            r = await c.get("/spend", params={"month": bad})
            assert r.status_code == 400 and "2026-11" in r.text
        r = await c.get("/spend", params={"channel": "<script>"})
        assert r.status_code == 400
    assert asked == []
    app, _ = spend_app(settings, real_redis, ledger=False)
    async with client(app) as c:
        r = await c.get("/spend")
        assert r.status_code == 404 and "spend ledger" in r.text


def test_months_move_across_years() -> None:
    assert shift("2026-12", 1) == "2027-01"
    assert shift("2026-01", -1) == "2025-12"
    assert shift("2026-11", 0) == "2026-11"


async def test_a_ledger_that_cannot_be_read_is_said_in_words(settings, real_redis) -> None:
    async def broken(*, month: str, team_key: str | None, channel_key: str | None) -> SpendReport:
        raise redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:6379")

    _, inspector = app_for(settings, real_redis)
    app = secured(create_app(dataclasses.replace(inspector, spend=broken)))
    async with client(app) as c:
        r = await c.get("/spend")
    assert r.status_code == 503
    assert "could not be read" in r.text and "ConnectionError" in r.text
    assert "6379" not in r.text  # the error's details stay in the log


async def test_each_table_shows_its_largest_lines(settings, real_redis) -> None:
    web = settings.web_ui.model_copy(update={"spend_lines_shown": 1})
    app, _ = spend_app(settings.model_copy(update={"web_ui": web}), real_redis)
    async with client(app) as c:
        html = (await c.get("/spend?month=2026-02")).text
    table = html[
        html.index('id="by-person"') : html.index("</table>", html.index('id="by-person"'))
    ]
    assert "Ana" in table and "Bo<" not in table
    assert "1 smaller line is counted in the total but not listed." in html
