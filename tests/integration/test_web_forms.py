"""A form an MCP server asks for, in the web chat (embedded mode, the scripted model, the
tests' own MCP server over stdio): the thread shows an HTML form built from the schema,
escaped like the rest of the page; what the form refuses comes back as a line; a good
answer reaches the server and the run ends with the booking. A run someone else asked
for is not the web chat's to answer. And the same in a real browser (Playwright driving
Debian's Chromium)."""

from __future__ import annotations

import asyncio
import os
import shutil

import pytest

from core.agent.context import ToolContext
from core.runs import control
from core.state import forms
from core.tools import elicit as elicit_module
from core.tools.elicit import ElicitRequest, elicit
from core.types import AgentSpec
from core.types.agent import AgentState
from tests.integration.forms_run import BOOKED, TASK, TOO_MANY_SAID, booker, with_shop
from tests.integration.test_web_chat import chat_app, client, post, until
from tests.integration.test_web_inspector import served

pytestmark = pytest.mark.integration
CHROMIUM = os.environ.get("CARAMBA_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture(autouse=True)
def fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(elicit_module, "POLL_S", 0.05)


def form_path(html: str) -> str:
    """Where the thread's form posts to."""
    start = html.index('action="/chat/', html.index('class="form-ask"')) + len('action="')
    return html[start : html.index('"', start)].replace("&amp;", "&")


async def test_the_web_chat_answers_a_servers_form(settings) -> None:
    async with chat_app(with_shop(settings), model=booker()) as (app, _), client(app) as c:
        asked = await post(c, "/chat", task=TASK)
        path = asked.headers["location"]
        html = await until(c, path, r'class="form-ask"')
        assert "shop asks (for Caramba&#39;s work): Who is the table for?" in html
        assert 'name="f:name"' in html and 'type="email" name="f:email"' in html
        assert 'type="number" name="f:guests" step="1" min="1" max="12"' in html
        assert '<option value="terrace">terrace</option>' in html
        assert 'type="checkbox" name="f:vegan" value="true"' in html
        await until(c, path, "waits for a person to answer a form")
        action = form_path(html)

        fields = {"f:name": "Ada", "f:guests": "20", "f:seating": "terrace", "f:vegan": "true"}
        await post(c, action, action="accept", **fields)
        await until(c, path, f"Not sent: {TOO_MANY_SAID}")
        await post(c, action, action="accept", **{**fields, "f:guests": "4"})
        done = await until(c, path, r'class="msg k-result"', timeout_s=30)
        assert BOOKED in done
        assert "Sent by the web chat to shop." in done
        assert 'name="f:name"' not in done, "the answered form shows no inputs"


async def test_a_run_someone_else_asked_for_is_not_the_web_chats(settings) -> None:
    async with chat_app(settings, model=booker()) as (app, svc), client(app) as c:
        spec = AgentSpec(name="Booker", role="solo")
        run_id = await control.propose_run(svc, "a task", spec, requested_by="U0ALICE")
        ctx = ToolContext(svc, AgentState(spec=spec, run_id=run_id))
        request = ElicitRequest(server="shop", message="Name?", schema={}, url=None)
        waiting = asyncio.create_task(elicit(ctx, request))
        for _ in range(200):
            opened = await forms.open_forms(svc.store, run_id)
            if opened:
                break
            await asyncio.sleep(0.02)
        (form,) = opened
        await post(c, f"/chat/{run_id}/form/{form.id}", action="accept")
        said = await until(c, f"/chat/{run_id}", "who asked")
        assert "or one of the approvers your admin named can answer this form" in said
        assert not waiting.done()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert await forms.open_forms(svc.store, run_id) == [], "an abandoned form closes"


@pytest.mark.skipif(not shutil.which(CHROMIUM), reason=f"no Chromium at {CHROMIUM}")
async def test_a_servers_form_in_a_browser(settings) -> None:
    playwright_api = pytest.importorskip("playwright.async_api")
    app_cm = chat_app(with_shop(settings), model=booker())
    async with app_cm as (app, _), served(app) as base:
        async with playwright_api.async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                page = await browser.new_page(viewport={"width": 1100, "height": 900})
                await page.goto(f"{base}/chat")
                await page.fill("textarea[name=task]", TASK)
                await page.click("form.ask button")
                form = page.locator(".form-ask form")
                await form.wait_for(timeout=20_000)
                await form.locator("input[name='f:name']").fill("Ada")
                await form.locator("input[name='f:guests']").fill("4")
                await form.locator("select[name='f:seating']").select_option("terrace")
                await form.locator("input[name='f:vegan']").check()
                await form.locator("button[value=accept]").click()
                result = page.locator(".msg.k-result")
                await result.wait_for(timeout=30_000)
                assert BOOKED in await result.inner_text()
                answered = page.locator(".form-ask .decided")
                await answered.wait_for(timeout=10_000)
                assert "Sent by the web chat to shop." in await answered.inner_text()
            finally:
                await browser.close()
