"""Schedules in the web chat, in a real browser (Playwright driving Debian's Chromium
headless; skipped where either is missing), in demo mode, at 1280 and 360 px wide (never
scrolling sideways): a request run to its result → "Run this every…" under it opens a
small form → the schedule made from that run, listed beside the chat → Pause, Resume,
Edit (its small form), Delete; then "schedule …" typed in a new chat with markup in it,
shown as written (no script runs). A schedule made from a finished run, due under a fake
clock, fires: its new chat appears in the past chats, opening with the schedule's line,
then its run's result.
Screenshots of each step go to ``$CARAMBA_SCREENSHOTS`` (a folder) when set."""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest

from bots.web.chat_place import WEB_PLACE
from core.runs import schedules as plans
from core.runs.firings import fire_due
from core.schedules.clock import FakeClock
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

    # Edit: the small form holds the schedule as it is; what differs is changed.
    item = page.locator(f"li.schedule[data-id='{s.id}']")
    await item.locator("details.s-edit summary").click()
    assert await page.input_value(f"#edit-when-{s.id}") == "every weekday at 9:00"
    assert await page.input_value(f"#edit-budget-{s.id}") == "1.5"
    await no_sideways(page, f"edit form at {width}")
    await page.fill(f"#edit-when-{s.id}", "every day at 10:00")
    await page.fill(f"#edit-tz-{s.id}", "Europe/Paris")
    await item.locator("button.b-save").click()
    await page.locator("p.said", has_text="Changed by the web chat").wait_for()
    (edited,) = (await plans.listed(svc, WEB_PLACE)).schedules
    assert (edited.rule.words, edited.rule.tz, edited.budget_usd) == (
        "every day at 10:00",
        "Europe/Paris",
        1.5,
    )
    assert "every day at 10:00" in await item.locator(".s-when").inner_text()
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


async def test_a_firing_is_a_new_chat_in_a_browser(settings) -> None:
    async with chat_app(settings) as (app, svc), served(app) as base:
        async with playwright_api.async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                page = await browser.new_page(viewport={"width": 1280, "height": 900})
                dialogs: list[str] = []
                page.on("dialog", lambda d: dialogs.append(d.message))
                await firing(page, base, svc)
            finally:
                await browser.close()
    assert dialogs == []


async def firing(page: Any, base: str, svc: Any) -> None:
    # A request run to its result, then "Run this every…" made from it.
    await page.goto(f"{base}/chat")
    await page.fill("textarea[name=task]", "Budget our offsite")
    await page.press("textarea[name=task]", "Enter")
    await page.locator("button.b-approve").click(timeout=20_000)
    await page.locator("details.every summary").wait_for(timeout=30_000)
    first = await page.locator(".chat-result").last.inner_text()
    await page.locator("details.every summary").click()
    await page.fill("#every-when", "every day at 9:00")
    await page.fill("#every-budget", "1.5")
    await page.locator("details.every button[type=submit]").click()
    await page.locator("p.said.ok").wait_for()
    (s,) = (await plans.listed(svc, WEB_PLACE)).schedules

    # Its slot comes (a fake clock): one firing, a new run that starts at once.
    assert await fire_due(svc, FakeClock(s.next_at + 1)) == 1
    fired = (await plans.listed(svc, WEB_PLACE)).schedules[0].last_run_id
    assert fired is not None and fired != s.from_run

    # The new chat shows up in the past chats (a reload brings it), and opens on the
    # schedule's line, then the run as a request's, to its result.
    link = page.locator(f"#past a[href='/chat/{fired}']")
    for _ in range(100):
        await page.goto(f"{base}/chat")
        if await link.count():
            break
        await page.wait_for_timeout(100)
    await link.click()
    await page.wait_for_url(f"**/chat/{fired}**")
    line = "Scheduled run (every day at 9:00) by the web chat: running now."
    await page.get_by_text(line).wait_for()
    result = page.locator(".chat-result")
    await result.first.wait_for(timeout=30_000)
    assert (await result.first.inner_text()).strip() == first.strip()
    assert await page.locator("button.b-approve").count() == 0, "approved once: no card"
    assert (await svc.store.get_run(fired)).status.value == "completed"
    await no_sideways(page, "firing at 1280")
