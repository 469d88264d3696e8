"""The web chat's whole flow in a real browser (Playwright driving Debian's Chromium
headless; skipped where either is missing), in demo mode: type a request → the card →
Edit an agent (a wrong model is refused beside its field; the edit shows on the card) →
Approve → live progress → answer the orchestrator's question → the result and a file
the agents wrote under outputs/, downloaded → the run in the inspector.

The demo's scripted team neither asks nor leaves files under outputs/, so this test's
scripted model is the demo's (its router, planner, prompt creator and agents) with an
orchestrator that asks where the offsite is and a budget kept in ``outputs/``.
Screenshots go to ``$CARAMBA_SCREENSHOTS`` (a folder) when set."""

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
from tests.integration.test_web_chat import chat_app
from tests.integration.test_web_inspector import served

CHROMIUM = os.environ.get("CARAMBA_CHROMIUM", "/usr/bin/chromium")
playwright_api = pytest.importorskip("playwright.async_api")
if not shutil.which(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)

QUESTION = "Which city is the offsite in: Lisbon or Porto?"
KEPT = f"outputs/{BUDGET_FILE}"
EDITED_MODEL = "openai/gpt-4o-mini"


def _kept_in_outputs(reply: Reply) -> Reply:
    """The demo's replies with the budget file under outputs/ (sent to the chat)."""
    calls = tuple(
        (name, {**args, "path": KEPT})
        if isinstance(args, dict) and args.get("path") == BUDGET_FILE
        else (name, args)
        for name, args in reply.calls
    )
    return Reply(reply.content, calls, reply.prompt_tokens, reply.completion_tokens)


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
        reply = _kept_in_outputs(reply)
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


async def test_the_whole_flow_in_a_browser(settings, tmp_path) -> None:
    model = asking_team()
    async with chat_app(settings, model=model) as (app, svc), served(app) as base:
        async with playwright_api.async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                page = await browser.new_page(viewport={"width": 1100, "height": 900})
                dialogs: list[str] = []
                page.on("dialog", lambda d: dialogs.append(d.message))
                await flow(page, base, svc, model, shots(tmp_path))
            finally:
                await browser.close()
    assert dialogs == []


async def flow(page: Any, base: str, svc: Any, model: ScriptedModel, folder: Path) -> None:
    # Type a request → the proposal card.
    await page.goto(f"{base}/chat")
    await page.fill("textarea[name=task]", "Budget our offsite <img src=x onerror=alert(1)>")
    await page.click("form.ask button")
    await page.locator("button.b-approve").wait_for(timeout=20_000)
    assert "<img src=x onerror=alert(1)>" in await page.inner_text("h1")

    # Edit: choose the lead; a model nobody knows is refused beside its field.
    await page.click("button.b-edit")
    await page.click(f"#edit-agents a:has-text('{LEAD}')")
    await page.fill("#f-model", "no-such-model")
    await page.click("button.b-save")
    error = page.locator(".field-error[data-field=model]")
    assert "is not a model Caramba knows" in await error.inner_text()
    await page.screenshot(path=str(folder / "web-chat-edit.png"), full_page=True)
    await page.fill("#f-model", EDITED_MODEL)
    await page.fill("#f-prompt", "Split the budget per person first, then write the file.")
    await page.click("button.b-save")
    card = page.locator(".msg.k-card")
    await card.locator(".edited").wait_for(timeout=10_000)
    shown = await card.inner_text()
    assert EDITED_MODEL in shown and "instructions, model edited by the web chat" in shown
    await page.screenshot(path=str(folder / "web-chat-card.png"), full_page=True)

    # Approve → live progress (the page follows the run) → the orchestrator's question.
    await page.click("button.b-approve")
    await page.locator(".msg.k-status").wait_for(timeout=10_000)
    question = page.locator(".msg.k-question")
    await question.wait_for(timeout=20_000)
    assert QUESTION in await question.inner_text()
    assert "Orchestrator" in await question.inner_text()
    await page.fill("form.say input[name=text]", "Porto")
    await page.click("form.say button")

    # The result, then the file the agents wrote, downloaded.
    result = page.locator(".msg.k-result")
    await result.wait_for(timeout=30_000)
    text = await result.inner_text()
    assert "Total: €5568" in text and "City (your answer): Porto." in text
    await page.locator("#chat-head .s-completed").wait_for(timeout=10_000)
    link = page.locator(".msg.k-files a", has_text=BUDGET_FILE)
    await link.wait_for(timeout=10_000)
    href = await link.get_attribute("href")
    assert href is not None and KEPT in href
    got = await page.request.get(base + href)
    assert got.status == 200 and "attachment" in got.headers["content-disposition"]
    assert "**Total: €5568**" in await got.text()
    # The status line, edited in place (maybe just after the result).
    await page.locator(".msg.k-status", has_text="agents 5/5 done").wait_for(timeout=10_000)
    await page.screenshot(path=str(folder / "web-chat-result.png"), full_page=True)

    # The thread's link opens the run in the inspector: the planned cohort, the question
    # answered, the edited lead's model, the file.
    await page.click("text=inspect this run")
    await page.locator("#agents").wait_for(timeout=10_000)
    assert "Budget lead" in await page.inner_text("#agents")
    assert EDITED_MODEL in await page.inner_text("#agents")
    assert "Porto" in await page.inner_text("#questions")
    assert KEPT in await page.inner_text("#files")
    assert "fan_out" in await page.inner_text("#plan")
    assert "agt_" not in await page.inner_text("#timeline")  # agents by name
    await page.screenshot(path=str(folder / "inspector-cohort.png"), full_page=True)

    # The edited lead is what ran.
    lead_models = {r.model for r in model.requests if r.agent_name == LEAD}
    assert lead_models == {EDITED_MODEL}
    lead_prompts = {r.messages[0].content for r in model.requests if r.agent_name == LEAD}
    assert all("Split the budget per person first" in (p or "") for p in lead_prompts)
