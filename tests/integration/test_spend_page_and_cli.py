"""The spend page and ``caramba spend`` read the same ledger: three runs in two channels
ended and folded in a real Redis; the page (in Chromium) shows the month's total that
``caramba spend`` prints for the same month, each channel's row links to the page
narrowed to that channel, and the narrowed page's total is what
``caramba spend --channel`` prints. A channel's budget row links there too."""

from __future__ import annotations

import asyncio
import shutil
import time
import uuid
from typing import Any

import pytest
from typer.testing import CliRunner

from bots.cli import app
from bots.web.app import Inspector, create_app, secured
from bots.web.live import Live
from bots.web.spend import ledger_source
from core.config_governance import BudgetRule, GovernanceSettings
from core.process.wiring import build_services
from core.scheduler.inline import InlineScheduler
from core.spend import ledger
from core.types.figures import exact_cost
from tests.conftest import REDIS_URL
from tests.integration.test_cli_spend import OPS, clean, dollars, seed
from tests.integration.test_web_chat import KEY
from tests.integration.test_web_inspector import served
from tests.planning_helpers import settings as planning_settings
from tests.scenarios.test_spend import direct_model

pytestmark = pytest.mark.integration
CHROMIUM = "/usr/bin/chromium"
playwright_api = pytest.importorskip("playwright.async_api")
if not shutil.which(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)
runner = CliRunner()


async def the_page(prefix: str, month: str) -> dict[str, Any]:
    """What the spend page shows for ``month``: its total, each channel's row and link,
    and the totals of the pages those links open."""
    from redis.asyncio import Redis

    base = planning_settings(library_top_k=0)
    rule = BudgetRule(month_usd=50.0, owner="UAna", owner_name="Ana", name="#ops")
    settings = base.model_copy(
        update={
            "redis": base.redis.model_copy(update={"url": REDIS_URL, "key_prefix": prefix}),
            "governance": GovernanceSettings(channels={OPS.key: rule}),
        }
    )
    client: Any = Redis.from_url(REDIS_URL, decode_responses=True)
    svc = build_services(settings, InlineScheduler(1), llm=direct_model(), redis=client)
    live = Live(svc.store, blocking=False)
    inspector = Inspector(
        svc.settings, svc.store, svc.workspace, KEY, live, open_list=True, spend=ledger_source(svc)
    )
    seen: dict[str, Any] = {"channels": {}}
    try:
        async with (
            served(secured(create_app(inspector))) as base_url,
            playwright_api.async_playwright() as p,
        ):
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                page = await browser.new_page()
                await page.goto(f"{base_url}/spend?month={month}")
                seen["total"] = await page.inner_text("#total strong")
                seen["total_exact"] = float(
                    await page.get_attribute("#total strong", "data-usd") or "nan"
                )
                rows = page.locator("#by-channel tbody tr")
                for i in range(await rows.count()):
                    link = rows.nth(i).locator("td a")
                    name = await link.inner_text()
                    seen["channels"][name] = await link.get_attribute("href")
                budget_link = page.locator("#budgets tbody tr td a").first
                seen["budget_href"] = await budget_link.get_attribute("href")
                # Follow #ops's row: the page narrowed to it.
                await page.locator("#by-channel tbody tr td a", has_text="#ops").click()
                await page.locator("h1", has_text="in #ops").wait_for()
                seen["ops_total"] = await page.inner_text("#total strong")
                seen["ops_rows"] = await page.locator("#by-channel tbody tr").count()
            finally:
                await browser.close()
    finally:
        await live.aclose()
        await client.aclose()
    return seen


def test_the_spend_page_and_caramba_spend_show_the_same_month() -> None:
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    env = {"CARAMBA_REDIS__URL": REDIS_URL, "CARAMBA_REDIS__KEY_PREFIX": prefix, "COLUMNS": "160"}
    try:
        total, per_channel = asyncio.run(seed(prefix))
        month = ledger.month_of(time.time())
        seen = asyncio.run(the_page(prefix, month))
        said = runner.invoke(app, ["spend", "--month", month], env=env)
        assert said.exit_code == 0, said.output
        cli_total = dollars(said.output, "Total:")
        # Both show what the ledger holds, to the cent and beyond: the page's exact figure
        # rounds to what the CLI prints, and both are the runs' costs.
        assert round(seen["total_exact"], 4) == pytest.approx(cli_total, abs=1e-9)
        assert seen["total_exact"] == pytest.approx(total, abs=1e-9)
        assert seen["total"] == exact_cost(cli_total)

        assert set(seen["channels"]) == {"#ops", "#dev"}
        for href in seen["channels"].values():
            assert href.startswith(f"/spend?month={month}&channel=slack%3AT0ACME%3AC0")
        assert seen["budget_href"] == f"/spend?month={month}&channel=slack%3AT0ACME%3AC0OPS"
        ops = runner.invoke(app, ["spend", "--month", month, "--channel", "#ops"], env=env)
        assert ops.exit_code == 0, ops.output
        ops_total = dollars(ops.output, "Total:")
        assert ops_total == pytest.approx(round(per_channel["#ops"], 4))
        assert seen["ops_total"] == exact_cost(ops_total)
        assert seen["ops_rows"] == 1  # narrowed: only #ops
    finally:
        asyncio.run(clean(prefix))
