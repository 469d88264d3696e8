"""The web chat's whole flow in a real browser (Playwright driving Debian's Chromium
headless; skipped where either is missing), in demo mode, at 1280 and at 360 px wide
(never scrolling sideways): type a request (Enter sends) → the card, the task shown
once as your message, Approve the primary button and reached by Tab → Edit an agent (a
wrong model is refused beside its field; the edit shows on the card) → Approve: the
card compact, saying who decided → the orchestrator's question, the run "waiting for
you" → the answer (Enter; Shift+Enter is a new line) echoed after it → the result's
Markdown rendered → every file the run wrote offered (``budget.md``, not under
outputs/), downloaded → the chat in the past chats → the run in the inspector.

The demo's scripted team does not ask, so this test's scripted model is the demo's (its
router, planner, prompt creator and agents) with an orchestrator that asks where the
offsite is. Screenshots of each step go to ``$CARAMBA_SCREENSHOTS`` (a folder) when set."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from core.process.demo_flow import team_model
from core.process.demo_planning import design
from core.process.demo_reading import called
from core.process.demo_team import BUDGET_FILE, LEAD
from tests.integration.approval_run import DENIAL, DONE, TASK, asking, writer
from tests.integration.test_web_chat import chat_app
from tests.integration.test_web_inspector import served
from tests.planning_helpers import settings as planning_settings

CHROMIUM = os.environ.get("CARAMBA_CHROMIUM", "/usr/bin/chromium")
playwright_api = pytest.importorskip("playwright.async_api")
if not shutil.which(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)

QUESTION = "Which city is the offsite in: Lisbon or Porto?"
EDITED_MODEL = "openai/gpt-4o-mini"


def asking_team() -> ScriptedModel:
    """The demo's scripted team, whose orchestrator first asks a question."""
    demo = team_model().responder
    assert demo is not None

    def respond(r: LLMRequest) -> Reply:
        if r.agent_name == "planner":
            cohort = design()
            cohort["agents"][0]["tools"].append("ask_user")  # the orchestrator may ask
            return Reply(calls=(call("submit_planner", cohort),))
        if r.agent_name == "Orchestrator" and not called(r, "ask_user"):
            return Reply(
                content="One thing first.", calls=(call("ask_user", {"question": QUESTION}),)
            )
        reply = demo(r)
        assert isinstance(reply, Reply)
        if r.agent_name == "Orchestrator" and reply.calls and reply.calls[0][0] == "finish":
            said = " ".join(m.content or "" for m in r.messages if m.role == "user")
            city = "Porto" if "Porto" in said else "unknown"
            args = reply.calls[0][1]
            assert isinstance(args, dict)
            result = f"{args['result']}\n\nCity (your answer): {city}."
            return Reply(reply.content, (call("finish", {"result": result}),))
        return reply

    return ScriptedModel(responder=respond)


def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("CARAMBA_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("width", [1280, 360])
async def test_the_whole_flow_in_a_browser(settings, tmp_path, width) -> None:
    model = asking_team()
    async with chat_app(settings, model=model) as (app, svc), served(app) as base:
        async with playwright_api.async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                page = await browser.new_page(viewport={"width": width, "height": 900})
                dialogs: list[str] = []
                page.on("dialog", lambda d: dialogs.append(d.message))
                await flow(page, base, svc, model, Shots(page, shots(tmp_path), width))
            finally:
                await browser.close()
    assert dialogs == []


class Shots:
    """A screenshot of each step (named by width and step), and no sideways scrolling."""

    def __init__(self, page: Any, folder: Path, width: int) -> None:
        self.page, self.folder, self.width = page, folder, width

    async def take(self, step: str) -> None:
        path = self.folder / f"web-chat-{self.width}-{step}.png"
        await self.page.screenshot(path=str(path), full_page=True)
        wide, room = await self.page.evaluate(
            "[document.scrollingElement.scrollWidth, window.innerWidth]"
        )
        assert wide <= room, f"{step} at {self.width} px scrolls sideways ({wide} > {room})"


async def flow(page: Any, base: str, svc: Any, model: ScriptedModel, shots: Shots) -> None:
    # Type a request (Enter sends) → the proposal card, the task shown once, as yours.
    await page.goto(f"{base}/chat")
    await shots.take("1-new")
    await page.fill("textarea[name=task]", "Budget our offsite <img src=x onerror=alert(1)>")
    await page.press("textarea[name=task]", "Enter")
    await page.locator("button.b-approve").wait_for(timeout=20_000)
    mine = page.locator(".msg[data-from=you]")
    assert await mine.count() == 1
    assert "<img src=x onerror=alert(1)>" in await mine.inner_text()
    assert await page.locator("#messages", has_text="onerror").count() == 1
    assert await page.locator(".msg.k-card", has_text="Budget our offsite").count() == 0
    assert "waiting for your approval" in await page.inner_text("#chat-head")
    # Approve is the primary button and reachable by the keyboard.
    assert await page.locator(".k-card .actions button").first.inner_text() == "Approve"
    await page.locator("#past a").first.focus()
    for _ in range(60):
        await page.keyboard.press("Tab")
        if await page.evaluate("document.activeElement.className") == "b-approve":
            break
    else:
        raise AssertionError("Tab never reached Approve")
    outline = await page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"  # focus visible
    await shots.take("2-card")

    # Edit: choose the lead; a model nobody knows is refused beside its field.
    await page.click("button.b-edit")
    await page.click(f"#edit-agents a:has-text('{LEAD}')")
    await page.fill("#f-model", "no-such-model")
    await page.click("button.b-save")
    error = page.locator(".field-error[data-field=model]")
    assert "is not a model Caramba knows" in await error.inner_text()
    await shots.take("3-edit")
    await page.fill("#f-model", EDITED_MODEL)
    await page.fill("#f-prompt", "Split the budget per person first, then write the file.")
    await page.click("button.b-save")
    card = page.locator(".msg.k-card")
    await card.locator(".edited").wait_for(timeout=10_000)
    shown = await card.inner_text()
    assert EDITED_MODEL in shown and "instructions, model edited by the web chat" in shown
    assert "Approve to start" in await page.inner_text("#messages")
    await shots.take("4-edited")

    # Approve → the card compact, saying who decided (expandable) → the question.
    await page.click("button.b-approve")
    decided = card.locator("details.decided-card")
    await decided.wait_for(timeout=10_000)
    assert "Approved by the web chat." in await decided.locator("> summary").inner_text()
    assert not await decided.evaluate("d => d.open")
    question = page.locator(".msg.k-question")
    await question.wait_for(timeout=20_000)
    assert QUESTION in await question.inner_text()
    assert "Orchestrator" in await question.locator(".who").inner_text()
    await question.locator(".waiting").wait_for(timeout=10_000)
    await page.locator("#chat-head", has_text="waiting for you").wait_for(timeout=10_000)
    thread = await page.inner_text("#messages")
    assert "Approve to start" not in thread and "Starting" not in thread
    assert "waiting_human" not in await page.inner_text("body")
    await shots.take("5-question")

    # Shift+Enter is a new line; Enter sends the answer, echoed after the question.
    box = page.locator("form.say textarea")
    await box.fill("Porto")
    await box.press("Shift+Enter")
    assert await box.input_value() == "Porto\n"
    await box.fill("Porto")
    await box.press("Enter")
    answer = page.locator(".msg[data-from=you]", has_text="Porto")
    await answer.wait_for(timeout=10_000)
    await question.locator(".waiting").wait_for(state="detached", timeout=10_000)
    kinds = await page.eval_on_selector_all("#messages > li", "ls => ls.map(l => l.className)")
    asked_at = next(i for i, c in enumerate(kinds) if "k-question" in c)
    assert any("k-you" in c for c in kinds[asked_at + 1 :])  # the answer comes after
    await shots.take("6-answered")

    # The result, its Markdown rendered (no ** shown); every file the run wrote offered.
    result = page.locator(".msg.k-result")
    await result.wait_for(timeout=30_000)
    assert await result.locator("strong", has_text="Total: €5568").count() == 1
    assert await result.locator("li").count() == 3
    text = await result.inner_text()
    assert "**" not in text and "City (your answer): Porto." in text
    await page.locator("#chat-head .s-completed", has_text="done").wait_for(timeout=10_000)
    link = page.locator(".msg.k-files a", has_text=BUDGET_FILE)
    await link.wait_for(timeout=10_000)
    href = await link.get_attribute("href")
    assert href is not None and f"/files/{BUDGET_FILE}?" in href
    got = await page.request.get(base + href)
    assert got.status == 200 and "attachment" in got.headers["content-disposition"]
    assert "**Total: €5568**" in await got.text()
    # The status line, edited in place (maybe just after the result), in words.
    await page.locator(".msg.k-status", has_text="5 of 5 agents done").wait_for(timeout=10_000)
    assert "Approve to start" not in await page.inner_text("#messages")
    await shots.take("7-result")

    # Past chats: this one, newest first, marked as the one open.
    here = page.locator("#past a[aria-current=page]")
    assert "Budget our offsite" in await here.inner_text()
    chat_url = page.url
    await page.goto(f"{base}/chat")
    assert "Budget our offsite" in await page.locator("#past li").first.inner_text()
    assert "done" in await page.locator("#past li").first.inner_text()
    await shots.take("8-past")
    await page.goto(chat_url)

    # The thread's link opens the run in the inspector: the planned cohort, the question
    # answered, the edited lead's model, the file.
    await page.click("text=inspect this run")
    await page.locator("#agents").wait_for(timeout=10_000)
    assert "Budget lead" in await page.inner_text("#agents")
    assert EDITED_MODEL in await page.inner_text("#agents")
    assert "Porto" in await page.inner_text("#questions")
    assert BUDGET_FILE in await page.inner_text("#files")
    assert "fan_out" in await page.inner_text("#plan")
    await page.screenshot(path=str(shots.folder / f"inspector-{shots.width}.png"), full_page=True)

    # The edited lead is what ran.
    lead_models = {r.model for r in model.requests if r.agent_name == LEAD}
    assert lead_models == {EDITED_MODEL}
    lead_prompts = {r.messages[0].content for r in model.requests if r.agent_name == LEAD}
    assert all("Split the budget per person first" in (p or "") for p in lead_prompts)


async def test_a_tool_approval_in_a_browser_at_360_px(tmp_path) -> None:
    """A write waiting for approval, at 360 px: its buttons reachable, the reason typed
    and Deny pressed, then Approve once; the run completes."""
    async with (
        chat_app(asking(planning_settings()), model=writer()) as (app, _svc),
        served(app) as base,
        playwright_api.async_playwright() as p,
    ):
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = await browser.new_page(viewport={"width": 360, "height": 800})
            shot = Shots(page, shots(tmp_path), 360)
            await page.goto(f"{base}/chat")
            await page.fill("textarea[name=task]", TASK)
            await page.press("textarea[name=task]", "Enter")
            await page.click("button.b-approve", timeout=20_000)
            waiting = page.locator(".msg.k-approval")
            await waiting.locator("button.b-deny").wait_for(timeout=20_000)
            assert "Writer wants to use write_file" in await waiting.inner_text()
            await shot.take("tool-1-waiting")
            await waiting.locator("input[name=text]").fill(DENIAL)
            await waiting.locator("button.b-deny").click()
            await page.locator(".msg.k-approval", has_text="Denied by the web chat").wait_for()
            again = page.locator(".msg.k-approval").last
            await again.locator("button", has_text="Approve once").click(timeout=20_000)
            await page.locator(".msg.k-result", has_text=DONE).wait_for(timeout=30_000)
            await shot.take("tool-2-done")
        finally:
            await browser.close()
