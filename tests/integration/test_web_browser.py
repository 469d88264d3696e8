"""The inspector in a real browser: Playwright driving Debian's Chromium headless
(``apt-get install chromium``; Playwright's own browser download does not work here).
Skipped where either is missing.

A finished cohort's page shows the tree, messages, tool calls and costs; a running run's
page updates live until the run ends; pages without a valid token are 403; markup agents
wrote is shown as text and no dialog fires. Screenshots go to ``$CARAMBA_SCREENSHOTS`` (a
folder) when set, else to the test's temporary folder."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs.control import start_run
from tests import scenarios
from tests.integration.test_web_inspector import (
    EVIL,
    app_for,
    evil_model,
    finished_run,
    served,
    solo,
    token,
)

pytestmark = pytest.mark.integration
CHROMIUM = os.environ.get("CARAMBA_CHROMIUM", "/usr/bin/chromium")
playwright_api = pytest.importorskip("playwright.async_api")
if not shutil.which(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    async with playwright_api.async_playwright() as p:
        launched = await p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            await launched.close()


def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("CARAMBA_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def test_a_finished_cohort_in_the_browser(
    make_services, settings, real_redis, browser, tmp_path
) -> None:
    run_id = await finished_run(
        make_services,
        settings,
        real_redis,
        scenarios.competition(),
        scenarios.orchestrator(),
        "Leap-year seconds, best answer wins",
    )
    app, _ = app_for(settings, real_redis)
    async with served(app) as base:
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        denied = await page.goto(f"{base}/runs/{run_id}")
        assert denied is not None and denied.status == 403
        expired = await page.goto(f"{base}/runs/{run_id}?t={token(run_id, ttl=-1)}")
        assert expired is not None and expired.status == 403
        foreign = await page.goto(f"{base}/runs/{run_id}?t={token('run_another')}")
        assert foreign is not None and foreign.status == 403

        listing = await page.goto(f"{base}/")
        assert listing is not None and listing.status == 200
        await page.click(f"text={'Leap-year seconds'}")
        await page.wait_for_selector("#agents")
        agents = await page.inner_text("#agents")
        for name in ("Orchestrator", "Team A lead", "Team B lead", "Judge", "Team B analyst"):
            assert name in agents
        assert "tok" in agents and "$" in agents
        timeline = await page.inner_text("#timeline")
        assert "→" in timeline and "private" in timeline
        # Expand the orchestrator: its turns and tool calls.
        await page.click("#agents summary >> text=Orchestrator")
        body = await page.inner_text("#agents")
        assert "create_agent" in body and "turn 1" in body
        await page.screenshot(path=str(shots(tmp_path) / "inspector.png"), full_page=True)


async def test_markup_is_text_and_no_dialog_fires(
    make_services, settings, real_redis, browser
) -> None:
    run_id = await finished_run(
        make_services, settings, real_redis, evil_model(), solo(), f"Task {EVIL}"
    )
    app, _ = app_for(settings, real_redis)
    dialogs: list[str] = []
    async with served(app) as base:
        page = await browser.new_page()
        page.on("dialog", lambda d: dialogs.append(d.message))
        await page.goto(f"{base}/runs/{run_id}?t={token(run_id)}")
        result = await page.inner_text("#result")
        assert "<script>alert(1)</script><img src=x onerror=alert(2)>" in result
        assert await page.locator("#result img").count() == 0
        await page.goto(f"{base}/")
        await asyncio.sleep(0.3)
    assert dialogs == []


async def test_a_running_run_updates_live(
    make_services, settings, real_redis, browser, tmp_path
) -> None:
    gate = asyncio.Event()

    class Gated(ScriptedModel):
        async def complete(self, request: LLMRequest) -> Any:
            await gate.wait()
            return await super().complete(request)

    def respond(r: LLMRequest) -> Reply:
        if not any(m.role == "tool" for m in r.messages):
            return Reply(calls=(call("write_file", {"path": "notes.md", "content": "# notes"}),))
        return Reply(calls=(call("finish", {"result": "All done, live."}),))

    svc = make_services(settings, Gated(responder=respond), redis=real_redis)
    run_id = await start_run(svc, "Write notes, then finish", solo(), requested_by="U-bob")
    app, _ = app_for(settings, real_redis)
    async with served(app) as base:
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        await page.goto(f"{base}/runs/{run_id}?t={token(run_id)}")
        assert "running" in await page.inner_text("#summary")
        assert "All done" not in await page.inner_text("body")
        await asyncio.sleep(0.3)  # the page's event stream is open
        gate.set()
        # Waiting by locator, not by a JavaScript predicate: the page's CSP forbids eval.
        await (
            page.locator("#timeline-list").get_by_text("the run completed").wait_for(timeout=15_000)
        )
        await page.locator("#result").get_by_text("All done, live.").wait_for(timeout=15_000)
        assert "completed" in await page.inner_text("#summary")
        assert "notes.md" in await page.inner_text("#files")
        assert await page.inner_text("#live") == "finished"
        await page.screenshot(path=str(shots(tmp_path) / "inspector-live.png"), full_page=True)


async def test_the_waterfall_in_the_browser(
    make_services, settings, real_redis, browser, tmp_path
) -> None:
    """Each agent has a lane of bars whose widths are in proportion to how long each
    took (the model takes 80 ms a call here); choosing an agent narrows the page to it."""
    model = scenarios.competition()
    answer = model.complete

    async def slow(request: LLMRequest) -> Any:
        await asyncio.sleep(0.08)
        return await answer(request)

    model.complete = slow  # type: ignore[method-assign]
    run_id = await finished_run(
        make_services, settings, real_redis, model, scenarios.orchestrator(), "Leap-year race"
    )
    app, _ = app_for(settings, real_redis)
    folder = shots(tmp_path)
    async with served(app) as base:
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        await page.goto(f"{base}/runs/{run_id}?t={token(run_id)}")
        lanes = page.locator("#waterfall .wf-lane")
        names = [
            await lanes.nth(i).locator(".wf-name a").inner_text()
            for i in range(await lanes.count())
        ]
        assert {"Orchestrator", "Judge", "Team A lead", "Team B analyst"} <= set(names)
        assert "took" in await page.inner_text("#run-took")
        per_second = []
        for i in range(await lanes.count()):
            lane = lanes.nth(i)
            assert await lane.locator("rect.b-turn").count() >= 1
            assert await lane.locator("rect.b-model").count() >= 1
            for rect in await lane.locator("rect.b-model").all():
                box = await rect.bounding_box()
                took = float(await rect.get_attribute("data-seconds") or 0)
                assert box is not None and took >= 0.08
                per_second.append((box["width"], took))
        # One axis for every lane: pixels per second are the same for every model call.
        scale = sum(w for w, _ in per_second) / sum(s for _, s in per_second)
        for width, took in per_second:
            assert abs(width - took * scale) <= 1.5, (width, took, scale)
        await page.locator("#waterfall").screenshot(path=str(folder / "waterfall.png"))
        await page.screenshot(path=str(folder / "inspector-time.png"), full_page=True)

        # The filter: choosing an agent submits the form (script) and narrows the page.
        judge = await page.locator(
            "#filter select[name=agent] option", has_text="Judge"
        ).get_attribute("value")
        await page.select_option("#filter select[name=agent]", judge)
        await page.wait_for_url(f"**agent={judge}**")
        assert await lanes.count() == 1
        assert await lanes.first.locator(".wf-name a").inner_text() == "Judge"
        rows = page.locator("#timeline-list li.line")
        assert await rows.count() >= 1
        for agents in await rows.evaluate_all("rs => rs.map(r => r.dataset.agents)"):
            assert judge in agents.split()
        await page.select_option("#filter select[name=kind]", "tools")
        await page.wait_for_url("**kind=tools**")
        kinds = await rows.evaluate_all("rs => rs.map(r => r.dataset.cat)")
        assert kinds and set(kinds) == {"tools"}
        # Pretty-printed arguments, folded until opened.
        finish = rows.filter(has_text="called finish").first
        await finish.locator("summary").first.click()
        assert '{\n  "result": ' in await finish.locator("pre").first.inner_text()
        await page.screenshot(path=str(folder / "inspector-filtered.png"), full_page=True)


async def test_waits_for_a_person_in_the_waterfall(
    make_services, real_redis, browser, tmp_path
) -> None:
    """A call held for approval twice: two waits in the agent's lane, the denied call
    shown failed in its turn with the time it took once decided."""
    from tests.integration.test_web_inspector_time import held_twice

    run_id, settings = await held_twice(make_services, real_redis)
    app, _ = app_for(settings, real_redis)
    async with served(app) as base:
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        await page.goto(f"{base}/runs/{run_id}?t={token(run_id)}")
        assert await page.locator("#waterfall rect.b-wait").count() == 2
        title = await page.locator("#waterfall rect.b-wait title").first.text_content()
        assert title is not None and "waited for approval of write_file" in title
        await page.click("#agents summary >> text=Writer")
        assert await page.locator("#agents .call.failed .tool").inner_text() == "write_file"
        await page.screenshot(path=str(shots(tmp_path) / "inspector-approvals.png"), full_page=True)
