"""Team spend in a real browser (Playwright driving Debian's Chromium headless; skipped
where either is missing), through the web chat and the spend page, on the ledger the
runs fill:

- a first request is answered; the web chat's channel is then over its monthly budget;
- a second request asks in the chat before planning, with Approve spending / Deny;
  Approve → the message says who decided, no buttons, and the run is answered;
- a third is denied: the run ends saying why, no model call made for it;
- ``/spend`` (from the inspector's nav) shows exactly what ``core.runs.spend.report``
  holds — the total, every line of the tables per channel, person and model, each day's
  bar — and the total is the sum of the runs' costs; the chart has its title and no
  script is needed to read it. Screenshots go to ``$CARAMBA_SCREENSHOTS`` when set."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bots.web.app import Inspector, create_app, secured
from bots.web.chat import WebChat
from bots.web.chat_place import WEB_PLACE
from bots.web.live import Live
from bots.web.spend import ledger_source
from core.config import Settings
from core.config_governance import BudgetRule, GovernanceSettings
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs import spend
from core.types.figures import exact_cost
from core.types.run import RunStatus
from tests.integration.test_web_chat import KEY, demo_services
from tests.integration.test_web_inspector import served

pytestmark = pytest.mark.integration
CHROMIUM = os.environ.get("CARAMBA_CHROMIUM", "/usr/bin/chromium")
playwright_api = pytest.importorskip("playwright.async_api")
if not shutil.which(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)

CALL_USD = 0.01
BUDGET_USD = 0.015


def governed(settings: Settings, owner: str = "web", owner_name: str = "the web chat") -> Settings:
    rule = BudgetRule(month_usd=BUDGET_USD, owner=owner, owner_name=owner_name, name="web chat")
    gov = GovernanceSettings(channels={WEB_PLACE.key: rule}, fold_every_s=0.01)
    return settings.model_copy(update={"governance": gov})


def direct_model() -> ScriptedModel:
    """Every request answered directly (a router call each), at ``CALL_USD`` a call."""
    m = ScriptedModel(cost_per_call_usd=CALL_USD)
    direct = {"path": "direct", "reason": "a fact", "answer": "Paris <b>is</b> the capital."}
    return m.script("router", *[Reply(calls=(call("submit_router", direct),))] * 6)


@contextlib.asynccontextmanager
async def spend_app(settings: Settings, model: ScriptedModel) -> AsyncIterator[tuple[Any, Any]]:
    async with demo_services(settings, model) as svc:
        live = Live(svc.store, blocking=False)
        inspector = Inspector(
            svc.settings,
            svc.store,
            svc.workspace,
            KEY,
            live,
            open_list=True,
            spend=ledger_source(svc),
        )
        chat = WebChat(svc, KEY, open=True)
        await chat.start()
        try:
            yield secured(create_app(inspector, chat)), svc
        finally:
            await chat.aclose()
            await live.aclose()


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    async with playwright_api.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            await browser.close()


def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("CARAMBA_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def ask(page: Any, base: str, task: str) -> str:
    await page.goto(f"{base}/chat")
    await page.fill("textarea[name=task]", task)
    await page.press("textarea[name=task]", "Enter")
    await page.wait_for_url(f"{base}/chat/run_*")
    return str(page.url).rsplit("/", 1)[1].split("?")[0]


async def runs_cost(svc: Any, run_ids: list[str]) -> float:
    total = 0.0
    for run_id in run_ids:
        run = await svc.store.get_run(run_id)
        total += (await svc.store.run_usage(run_id)).cost_usd
        total += run.planning.cost_usd if run.planning else 0.0
    return total


async def folded(svc: Any, total: float, timeout_s: float = 20) -> Any:
    """The month's report once the ledger holds ``total`` (the background loop folds
    ended runs in)."""
    for _ in range(int(timeout_s / 0.05)):
        report = await spend.report(svc)
        if abs(report.total_usd - total) < 1e-9 and not report.under_way_usd:
            return report
        await asyncio.sleep(0.05)
    raise AssertionError(f"the ledger never held {total}: {report}")


async def test_over_budget_in_the_chat_and_the_spend_page(settings, tmp_path) -> None:
    model = direct_model()
    async with (
        spend_app(governed(settings), model) as (app, svc),
        served(app) as base,
        chromium() as browser,
    ):
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        dialogs: list[str] = []
        page.on("dialog", lambda d: dialogs.append(d.message))

        first = await ask(page, base, "What is the capital of France?")
        await page.locator(".msg.k-result").wait_for(timeout=20_000)
        spent = await runs_cost(svc, [first])
        assert spent >= BUDGET_USD
        await folded(svc, spent)

        # Over the month's budget: the ask, before planning, with its two buttons.
        second = await ask(page, base, "And of Spain?")
        ask_box = page.locator(".spend-ask")
        await ask_box.wait_for(timeout=20_000)
        said = await ask_box.inner_text()
        assert "over its channel budget" in said and "the web chat" in said
        assert exact_cost(spent) in said and "$0.02" in said  # $0.015, as core says it
        buttons = ask_box.locator("button")
        assert await buttons.all_inner_texts() == ["Approve spending", "Deny"]
        assert (await svc.store.get_run(second)).status is RunStatus.PLANNING
        calls_before = len(model.requests)
        await page.screenshot(path=str(shots(tmp_path) / "spend-ask.png"), full_page=True)
        await buttons.first.click()
        await page.locator(".msg.k-result").wait_for(timeout=20_000)
        decided = await page.inner_text(".spend-ask")
        assert "✔ Spending over the budget approved by the web chat." in decided
        assert await page.locator(".spend-ask button").count() == 0
        assert len(model.requests) > calls_before

        third = await ask(page, base, "And of Italy?")
        await page.locator(".spend-ask button").first.wait_for(timeout=20_000)
        calls_before = len(model.requests)
        await page.locator(".spend-ask button", has_text="Deny").click()
        await page.locator(".msg.k-result").wait_for(timeout=20_000)
        assert "✖ Spending over the budget denied by the web chat." in await page.inner_text(
            ".spend-ask"
        )
        ended = await svc.store.get_run(third)
        assert ended.status is RunStatus.FAILED
        assert "did not approve going over" in await page.inner_text(".msg.k-result")
        assert len(model.requests) == calls_before  # never planned

        total = await runs_cost(svc, [first, second, third])
        report = await folded(svc, total)

        # The spend page, from the inspector's nav, shows what the ledger holds.
        await page.goto(f"{base}/")
        await page.click("nav >> text=Spend")
        await page.locator("#total").wait_for()
        await page.screenshot(path=str(shots(tmp_path) / "spend-page.png"), full_page=True)
        assert await page.inner_text("#total strong") == exact_cost(report.total_usd)
        for table, lines in (
            ("by-channel", report.by_channel),
            ("by-person", report.by_person),
            ("by-model", report.by_model),
            ("by-team", report.by_team),
        ):
            rows = page.locator(f"#{table} tbody tr")
            assert await rows.count() == len(lines)
            for i, line in enumerate(lines):
                cells = await rows.nth(i).locator("td").all_inner_texts()
                assert cells[:2] == [line.name or line.key, exact_cost(line.cost_usd)]
        assert [line.name for line in report.by_channel] == ["the web chat"]
        assert [line.name for line in report.by_person] == ["the web chat"]
        budget = await page.locator("#budgets tbody tr").all_inner_texts()
        assert len(budget) == 1 and exact_cost(BUDGET_USD) in budget[0]
        chart = page.locator("svg.spend-chart")
        assert "Spend per day" in (await chart.locator("title").first.text_content() or "")
        titles = await chart.locator("rect > title").all_text_contents()
        assert len(titles) >= 28  # every day of the month
        for day in report.by_day:
            assert f"{day.key}: {exact_cost(day.cost_usd)}" in titles
        assert sum(d.cost_usd for d in report.by_day) == pytest.approx(total)
        # On a phone's width the page never scrolls sideways (the chart shrinks).
        await page.set_viewport_size({"width": 360, "height": 800})
        await page.reload()
        wide, room = await page.evaluate(
            "[document.scrollingElement.scrollWidth, window.innerWidth]"
        )
        assert wide <= room, f"the spend page scrolls sideways at 360 px ({wide} > {room})"
        await page.screenshot(path=str(shots(tmp_path) / "spend-page-360.png"), full_page=True)
    assert dialogs == []


async def over_budget(browser: Any, base: str, svc: Any) -> tuple[Any, str]:
    """A first request answered (the month now over its budget), a second waiting for
    its spending decision: the page and the second run's id."""
    page = await browser.new_page()
    first = await ask(page, base, "What is the capital of France?")
    await page.locator(".msg.k-result").wait_for(timeout=20_000)
    await folded(svc, await runs_cost(svc, [first]))
    second = await ask(page, base, "And of Spain?")
    await page.locator(".spend-ask button").first.wait_for(timeout=20_000)
    return page, second


async def test_someone_elses_budget_is_not_the_web_chats_to_approve(settings) -> None:
    model = direct_model()
    owned = governed(settings, owner="U0ANA", owner_name="Ana")
    async with spend_app(owned, model) as (app, svc), served(app) as base, chromium() as browser:
        page, second = await over_budget(browser, base, svc)
        assert "It waits for Ana" in await page.inner_text(".spend-ask")
        await page.locator(".spend-ask button", has_text="Approve spending").click()
        told = page.locator(".msg", has_text="Only Ana or an admin may decide")
        await told.first.wait_for(timeout=10_000)
        assert await page.locator(".spend-ask button").count() == 2
        assert (await svc.store.get_run(second)).status is RunStatus.PLANNING


async def test_an_ask_whose_run_was_cancelled_loses_its_buttons_at_the_first_click(
    settings,
) -> None:
    from core.runs.control import cancel_run

    model = direct_model()
    owned = governed(settings, owner="U0ANA", owner_name="Ana")
    async with spend_app(owned, model) as (app, svc), served(app) as base, chromium() as browser:
        page, second = await over_budget(browser, base, svc)
        assert (await cancel_run(svc, second, "U0ANA", name="Ana")).ok
        await page.locator(".spend-ask button", has_text="Approve spending").click()
        ended = page.locator(".spend-ask", has_text="ended before anybody decided")
        await ended.wait_for(timeout=10_000)
        assert "cancelled by Ana" in await ended.inner_text()
        assert await page.locator(".spend-ask button").count() == 0
        assert (await svc.store.get_run(second)).status is RunStatus.CANCELLED
