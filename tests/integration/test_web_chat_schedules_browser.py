"""Schedules in the web chat, in a real browser (Playwright driving Debian's Chromium
headless; skipped where either is missing), in demo mode, at 1280 and 360 px wide (never
scrolling sideways): a request run to its result → "Run this every…" under it opens a
small form → the schedule made from that run, listed beside the chat → Pause, Resume,
Delete; then "schedule …" typed in a new chat with markup in it, shown as written (no
script runs). Screenshots of each step go to ``$CARAMBA_SCREENSHOTS`` (a folder) when set."""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest

from bots.web.chat_place import WEB_PLACE
from core.runs import schedules as plans
from tests.integration.test_web_chat import chat_app
from tests.integration.test_web_inspector import served

CHROMIUM = os.environ.get("CARAMBA_CHROMIUM", "/usr/bin/chromium")
playwright_api = pytest.importorskip("playwright.async_api")
if not shutil.which(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)


async def no_sideways(page: Any, step: str) -> None:
    """No sideways scrolling; a screenshot of the step in ``$CARAMBA_SCREENSHOTS`` if set."""
    if folder := os.environ.get("CARAMBA_SCREENSHOTS"):
        name = step.replace(" ", "-")
        await page.screenshot(path=f"{folder}/web-schedules-{name}.png", full_page=True)
    wide, room = await page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    assert wide <= room, f"{step} scrolls sideways ({wide} > {room})"


@pytest.mark.parametrize("width", [1280, 360])
async def test_schedules_in_a_browser(settings, width) -> None:
    async with chat_app(settings) as (app, svc), served(app) as base:
        async with playwright_api.async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                page = await browser.new_page(viewport={"width": width, "height": 900})
                dialogs: list[str] = []
                page.on("dialog", lambda d: dialogs.append(d.message))
                await flow(page, base, svc, width)
            finally:
                await browser.close()
    assert dialogs == []


async def flow(page: Any, base: str, svc: Any, width: int) -> None:
    # A request run to its result.
    await page.goto(f"{base}/chat")
    assert await page.locator("#schedules", has_text="No schedules yet.").count() == 1
    await page.fill("textarea[name=task]", "Budget our offsite")
    await page.press("textarea[name=task]", "Enter")
    await page.locator("button.b-approve").click(timeout=20_000)
    every = page.locator("details.every summary")
    await every.wait_for(timeout=30_000)
    run_id = page.url.rsplit("/", 1)[-1].split("?")[0]
    await no_sideways(page, f"result at {width}")

    # "Run this every…": the small form, then the schedule made from that run.
    await every.click()
    await page.fill("#every-when", "every weekday at 9:00")
    await page.fill("#every-budget", "1.5")
    await page.locator("details.every button[type=submit]").click()
    await page.locator("p.said.ok").wait_for()
    assert "Scheduled by the web chat" in await page.locator("p.said").inner_text()
    (s,) = (await plans.listed(svc, WEB_PLACE)).schedules
    assert s.from_run == run_id and s.budget_usd == 1.5
    item = page.locator(f"li.schedule[data-id='{s.id}']")
    assert "every weekday at 9:00" in await item.inner_text()
    await no_sideways(page, f"schedules at {width}")

    # Pause, Resume, Delete from the list beside the chat.
    await page.goto(f"{base}/chat/{run_id}")
    await page.locator(f"li.schedule[data-id='{s.id}'] button.b-pause").click()
    await page.locator("p.said", has_text="Paused by the web chat").wait_for()
    assert (await plans.listed(svc, WEB_PLACE)).schedules[0].paused
    assert "paused" in await page.locator(f"li.schedule[data-id='{s.id}']").inner_text()
    await page.locator(f"li.schedule[data-id='{s.id}'] button.b-resume").click()
    await page.locator("p.said", has_text="Resumed by the web chat").wait_for()
    await page.locator(f"li.schedule[data-id='{s.id}'] button.b-delete").click()
    await page.locator("p.said", has_text="Deleted by the web chat").wait_for()
    assert (await plans.listed(svc, WEB_PLACE)).schedules == ()

    # Typed in a new chat, with markup: shown as written.
    await page.goto(f"{base}/chat")
    typed = "schedule every day at 7:00: water the <img src=x onerror=alert(1)> plants, $2"
    await page.fill("textarea[name=task]", typed)
    await page.press("textarea[name=task]", "Enter")
    await page.locator("p.said.ok").wait_for()
    (s,) = (await plans.listed(svc, WEB_PLACE)).schedules
    assert s.task == "water the <img src=x onerror=alert(1)> plants" and s.budget_usd == 2.0
    shown = await page.locator(f"li.schedule[data-id='{s.id}'] .s-task").inner_text()
    assert "<img src=x onerror=alert(1)>" in shown
    assert await page.locator("#schedules img").count() == 0
    await no_sideways(page, f"typed at {width}")
