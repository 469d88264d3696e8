"""The web chat, the chat layer's third adapter, in demo mode (everything in this process,
the scripted offline model): a request → the card → Approve → progress → the result with
its rating buttons; Cancel and refusals; forms from other sites refused; an operator's
token needed off loopback; what people typed is escaped. And in a real browser when
Chromium is there (test_web_chat_browser.py)."""

from __future__ import annotations

import asyncio
import contextlib
import re
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from bots.chat.threads import Shown
from bots.web.access import OPERATOR, Signer
from bots.web.app import Inspector, create_app, secured
from bots.web.chat import WebChat
from bots.web.live import Live
from bots.web.main import web_services
from core.config import Settings
from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from core.process.demo_flow import offline_settings
from core.process.embedded import embedded_services
from core.runs.control import start_run
from core.types import AgentSpec

KEY = Signer(b"c" * 32)
ORIGIN = "http://127.0.0.1:8400"


@contextlib.asynccontextmanager
async def demo_services(settings: Settings, model: ScriptedModel | None) -> AsyncIterator[Any]:
    """``caramba web --demo``'s services; with ``model``, that scripted model instead of
    the demo's team."""
    if model is None:
        async with web_services(settings, demo=True) as svc:
            yield svc
        return
    with tempfile.TemporaryDirectory(prefix="caramba-web-test-") as scratch:
        async with embedded_services(offline_settings(settings, Path(scratch)), model) as svc:
            yield svc


@contextlib.asynccontextmanager
async def chat_app(
    settings: Settings, *, local: bool = True, model: ScriptedModel | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    async with demo_services(settings, model) as svc:
        live = Live(svc.store, blocking=False)
        inspector = Inspector(svc.settings, svc.store, svc.workspace, KEY, live, open_list=local)
        chat = WebChat(svc, KEY, open=local)
        await chat.start()
        try:
            yield secured(create_app(inspector, chat)), svc
        finally:
            await chat.aclose()
            await live.aclose()


@contextlib.asynccontextmanager
async def client(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=ORIGIN) as c:
        yield c


async def until(c: httpx.AsyncClient, path: str, pattern: str, timeout_s: float = 30) -> str:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        html = (await c.get(path)).text
        if re.search(pattern, html):
            return html
        assert loop.time() < deadline, f"{pattern!r} never showed:\n{html[-3000:]}"
        await asyncio.sleep(0.1)


def post(c: httpx.AsyncClient, path: str, **fields: str) -> Any:
    return c.post(path, data=fields, headers={"origin": ORIGIN})


async def test_request_card_approve_result(settings) -> None:
    async with chat_app(settings) as (app, svc), client(app) as c:
        assert (await c.get("/chat")).status_code == 200
        asked = await post(c, "/chat", task="Budget our offsite <script>alert(1)</script>")
        assert asked.status_code == 303
        path = asked.headers["location"]
        run_id = path.rsplit("/", 1)[1]
        card = await until(c, path, r'value="approve"')
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in card and "<script>alert" not in card
        assert "Budget lead" in card and "Approve" in card and "Reject" in card
        assert (await post(c, f"{path}/act", action="approve")).status_code == 303
        done = await until(c, path, r'class="msg k-result"', timeout_s=60)
        assert "Total: €5568" in done
        assert 'value="up"' in done and 'value="approve"' not in done
        # The card names who decided, as the people room says it: never the id "web".
        assert "Approved by the web chat." in done and "by web" not in done
        await until(c, path, r"5 of 5 agents done")  # the status line, edited in place
        # The inspector link on the page opens the run.
        inspect = re.search(r'href="(/runs/[^"]+)">inspect this run', done)
        assert inspect is not None
        assert (await c.get(inspect.group(1).replace("&amp;", "&"))).status_code == 200
        # Rating the result, then a decision too late: told in the thread.
        await post(c, f"{path}/act", action="up")
        await post(c, f"{path}/act", action="approve")
        told = await until(c, path, r"Thanks for rating")
        assert "already" in told
        run = await svc.store.get_run(run_id)
        assert run.requested_by == "web" and run.status.value == "completed"


async def test_reject_and_cross_site_forms(settings) -> None:
    async with chat_app(settings) as (app, svc), client(app) as c:
        asked = await post(c, "/chat", task="Budget our offsite")
        path = asked.headers["location"]
        await until(c, path, r'value="reject"')
        evil = await c.post(
            f"{path}/act", data={"action": "approve"}, headers={"origin": "http://evil.example"}
        )
        assert evil.status_code == 403
        sneaky = await c.post("/chat", data={"task": "x"}, headers={"sec-fetch-site": "cross-site"})
        assert sneaky.status_code == 403
        assert (await post(c, f"{path}/act", action="reject")).status_code == 303
        await until(c, path, r"Rejected by the web chat\.")
        run = await svc.store.get_run(path.rsplit("/", 1)[1])
        assert run.status.value == "rejected"


async def test_the_chat_needs_an_operator_token_off_loopback(settings) -> None:
    async with chat_app(settings, local=False) as (app, _svc), client(app) as c:
        assert (await c.get("/chat")).status_code == 403
        assert (await post(c, "/chat", task="x")).status_code == 403
        t = KEY.token(OPERATOR, 60)
        assert (await c.get("/chat", params={"t": t})).status_code == 200
        asked = await c.post(f"/chat?t={t}", data={"task": "Budget"}, headers={"origin": ORIGIN})
        assert asked.status_code == 303 and f"?t={t}" in asked.headers["location"]
        thread = asked.headers["location"]
        assert (await c.get(thread.split("?", 1)[0])).status_code == 403
        assert (await c.get(thread)).status_code == 200


async def test_an_agents_question_answered_in_the_chat(make_services, settings) -> None:
    """An agent asks; the question shows in the thread; the answer box answers it."""

    def respond(r: LLMRequest) -> Reply:
        answers = [m.content or "" for m in r.messages if m.role == "user"][1:]
        if not any(m.role == "tool" for m in r.messages):
            return Reply(calls=(call("ask_user", {"question": "Which city <b>first</b>?"}),))
        said = next((a for a in answers if "Lisbon" in a), "?")
        return Reply(calls=(call("finish", {"result": f"Going there: {'Lisbon' in said}"}),))

    svc = make_services(settings, ScriptedModel(responder=respond))
    chat = WebChat(svc, KEY, open=True)
    live = Live(svc.store, blocking=False)
    inspector = Inspector(svc.settings, svc.store, svc.workspace, KEY, live, open_list=True)
    spec = AgentSpec(name="Planner", role="solo", tools=("ask_user", "finish"))
    run_id = await start_run(svc, "Plan the trip", spec, requested_by="web")
    await chat.relays.follow(Shown(run_id=run_id, channel="web", thread=run_id))
    try:
        async with client(secured(create_app(inspector, chat))) as c:
            path = f"/chat/{run_id}"
            asked = await until(c, path, r"class=\"msg k-question\"")
            assert "Which city &lt;b&gt;first&lt;/b&gt;?" in asked
            assert (await post(c, f"{path}/act", action="say", text="Lisbon")).status_code == 303
            done = await until(c, path, r"Going there: True")
            assert 'class="msg k-result"' in done
    finally:
        await chat.aclose()
        await live.aclose()
