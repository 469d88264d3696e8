"""``caramba web``'s run inspector against real runs in a real Redis: the runs list, a
run's page (tree, messages, tool calls, costs, files, result), tokens (none, expired,
another run's), escaping, the security headers, downloads, live events over a real
uvicorn, and no secret in any page."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import uvicorn

from bots.web.access import OPERATOR, Signer, run_path, run_scope
from bots.web.app import CSP, create_app, secured
from bots.web.main import inspector_for
from core.agent.questions import answer_question, open_questions
from core.config import Settings
from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs import budget, control
from core.runs.control import start_run
from core.types import AgentSpec
from core.types.run import RunBudget
from tests import scenarios
from tests.helpers import collect

pytestmark = pytest.mark.integration

KEY = Signer(b"k" * 32)
EVIL = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def prefixed(settings: Settings, redis: Any) -> Settings:
    return settings.model_copy(
        update={"redis": settings.redis.model_copy(update={"key_prefix": redis.test_prefix})}
    )


def app_for(settings: Settings, redis: Any, *, local: bool = True) -> Any:
    inspector = inspector_for(prefixed(settings, redis), redis, local=local, sign=KEY)
    return secured(create_app(inspector)), inspector


@contextlib.asynccontextmanager
async def client(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8400") as c:
        yield c


def token(run_id: str, ttl: float = 600) -> str:
    return KEY.token(run_scope(run_id), ttl)


def evil_model() -> ScriptedModel:
    """One agent that writes a file and finishes with a result holding markup."""

    def respond(r: LLMRequest) -> Reply:
        done = sum(m.role == "tool" for m in r.messages)
        if done == 0:
            return Reply(
                content=f"Writing {EVIL}",
                calls=(call("write_file", {"path": "out/evil.html", "content": EVIL}),),
            )
        return Reply(calls=(call("finish", {"result": f"Done: {EVIL}"}),))

    return ScriptedModel(responder=respond, cost_per_call_usd=0.0125)


def solo() -> AgentSpec:
    return AgentSpec(name="Writer <b>", role="solo", tools=("write_file", "finish"))


async def finished_run(
    make_services: Any, settings: Settings, redis: Any, model: Any, root: AgentSpec, task: str
) -> str:
    svc = make_services(settings, model, redis=redis)
    run_id = await start_run(svc, task, root, requested_by="U-alice")
    events = await collect(svc, run_id, timeout_s=30)
    assert events[-1].kind == "run_finished", events[-3:]
    return run_id


async def test_run_page_shows_the_cohort(make_services, settings, real_redis) -> None:
    run_id = await finished_run(
        make_services,
        settings,
        real_redis,
        scenarios.competition(),
        scenarios.orchestrator(),
        "Leap-year seconds, best answer wins",
    )
    app, _ = app_for(settings, real_redis)
    async with client(app) as c:
        listing = await c.get("/")
        page = await c.get(f"/runs/{run_id}", params={"t": token(run_id)})
    assert listing.status_code == 200
    assert run_id in listing.text and "completed" in listing.text and "U-alice" in listing.text
    # The list links each run with a token that opens it.
    link = re.search(rf'href="(/runs/{run_id}\?t=[^"]+)"', listing.text)
    assert link is not None
    assert page.status_code == 200
    html = page.text
    for name in ("Orchestrator", "Team A lead", "Team B lead", "Judge", "Team A analyst"):
        assert name in html
    assert "create_agent" in html and "send_message" in html  # tool calls
    assert "→" in html and "private" in html  # the timeline's messages
    assert "Winner:" in html  # the result
    assert "tok" in html and "$" in html  # tokens and costs per agent


async def test_runs_list_needs_an_operator_token_off_loopback(
    make_services, settings, real_redis
) -> None:
    run_id = await finished_run(
        make_services, settings, real_redis, evil_model(), solo(), "Write a file"
    )
    app, _ = app_for(settings, real_redis, local=False)
    async with client(app) as c:
        assert (await c.get("/")).status_code == 403
        assert (await c.get("/", params={"t": token(run_id)})).status_code == 403
        ok = await c.get("/", params={"t": KEY.token(OPERATOR, 60)})
        assert ok.status_code == 200 and run_id in ok.text
        # An operator's token opens any run's page too.
        page = await c.get(f"/runs/{run_id}", params={"t": KEY.token(OPERATOR, 60)})
        assert page.status_code == 200


async def test_run_page_refuses_missing_expired_and_foreign_tokens(
    make_services, settings, real_redis
) -> None:
    run_id = await finished_run(
        make_services, settings, real_redis, evil_model(), solo(), "Write a file"
    )
    app, _ = app_for(settings, real_redis)
    async with client(app) as c:
        paths = [f"/runs/{run_id}", f"/runs/{run_id}/events", f"/runs/{run_id}/files/out/evil.html"]
        for path in paths:
            assert (await c.get(path)).status_code == 403
            assert (await c.get(path, params={"t": token(run_id, ttl=-5)})).status_code == 403
            assert (await c.get(path, params={"t": token("run_other")})).status_code == 403
            forged = token(run_id)[:-2] + "AA"
            assert (await c.get(path, params={"t": forged})).status_code == 403
            signed_elsewhere = Signer(b"x" * 32).token(run_scope(run_id), 60)
            assert (await c.get(path, params={"t": signed_elsewhere})).status_code == 403
        assert (await c.get(f"/runs/{run_id}", params={"t": token(run_id)})).status_code == 200


async def test_markup_is_shown_as_text_with_a_csp(make_services, settings, real_redis) -> None:
    run_id = await finished_run(
        make_services, settings, real_redis, evil_model(), solo(), f"Task {EVIL}"
    )
    app, _ = app_for(settings, real_redis)
    async with client(app) as c:
        page = await c.get(f"/runs/{run_id}", params={"t": token(run_id)})
        listing = await c.get("/")
    for response in (page, listing):
        assert response.status_code == 200
        assert "<script>alert" not in response.text and "<img src=x" not in response.text
        assert response.headers["content-security-policy"] == CSP
        assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "no-referrer"
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "Writer &lt;b&gt;" in page.text
    # The only script is the page's own file (none inline), and only while a run goes on.
    assert not re.search(r"<script(?![^>]*src=\"/static/inspector\.js\")", page.text)


async def test_files_download_as_attachments(make_services, settings, real_redis) -> None:
    run_id = await finished_run(
        make_services, settings, real_redis, evil_model(), solo(), "Write a file"
    )
    app, _ = app_for(settings, real_redis)
    async with client(app) as c:
        page = await c.get(f"/runs/{run_id}", params={"t": token(run_id)})
        href = re.search(r'href="(/runs/[^"]+/files/out/evil\.html\?t=[^"]+)"', page.text)
        assert href is not None
        got = await c.get(href.group(1).replace("&amp;", "&"))
        missing = await c.get(f"/runs/{run_id}/files/nope.txt", params={"t": token(run_id)})
        escape = await c.get(
            f"/runs/{run_id}/files/..%2F..%2Fetc%2Fpasswd", params={"t": token(run_id)}
        )
    assert got.status_code == 200 and got.text == EVIL
    assert got.headers["content-type"] == "application/octet-stream"
    assert got.headers["content-disposition"].startswith("attachment;")
    assert missing.status_code == 404 and escape.status_code == 404


async def test_no_secret_in_any_page(make_services, settings, real_redis, monkeypatch) -> None:
    secrets = {
        "OPENAI_API_KEY": "sk-test-SECRET-openai-0123456789",
        "SLACK_BOT_TOKEN": "xoxb-SECRET-slack-0123456789",
        "CARAMBA_WEB_SECRET": "SECRET-web-signing-key-0123456789abcdef",
        "MY_LLM_KEY": "SECRET-llm-key-0123456789",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    keyed = settings.model_copy(
        update={"llm": settings.llm.model_copy(update={"api_key_env": "MY_LLM_KEY"})}
    )
    run_id = await finished_run(
        make_services, settings, real_redis, evil_model(), solo(), "Write a file"
    )
    app, _ = app_for(keyed, real_redis)
    async with client(app) as c:
        pages = [
            await c.get("/"),
            await c.get(f"/runs/{run_id}", params={"t": token(run_id)}),
            await c.get(f"/runs/{run_id}"),
            await c.get("/static/inspector.js"),
        ]
    for page in pages:
        for value in secrets.values():
            assert value not in page.text
        assert "SECRET" not in page.text


# --- live updates over a real server -----------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def served(app: Any) -> AsyncIterator[str]:
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="warning")
    )
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(200):
            if server.started:
                break
            await asyncio.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


async def sse(response: httpx.Response) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    event, data = "", ""
    async for line in response.aiter_lines():
        if line.startswith("event:"):
            event = line.split(":", 1)[1].strip()
        elif line.startswith("data:"):
            data = line.split(":", 1)[1].strip()
        elif line == "" and event:
            yield event, json.loads(data or "{}")
            event, data = "", ""


async def test_live_events_reach_the_page(make_services, settings, real_redis) -> None:
    """A page opened on a running run gets the events that follow, over SSE, and the
    stream ends after the run finished; two pages on one run share one reader."""
    gate = asyncio.Event()

    def respond(r: LLMRequest) -> Reply:
        return Reply(calls=(call("finish", {"result": "done <b>live</b>"}),))

    class Gated(ScriptedModel):
        async def complete(self, request: LLMRequest) -> Any:
            await gate.wait()
            return await super().complete(request)

    svc = make_services(settings, Gated(responder=respond), redis=real_redis)
    run_id = await start_run(svc, "Wait, then finish", solo(), requested_by="U-bob")
    app, inspector = app_for(settings, real_redis)
    async with served(app) as base, httpx.AsyncClient(base_url=base, timeout=20) as c:
        page = await c.get(f"/runs/{run_id}", params={"t": token(run_id)})
        assert page.status_code == 200 and 'src="/static/inspector.js"' in page.text
        events_url = re.search(r'data-events="([^"]+)"', page.text)
        assert events_url is not None
        url = events_url.group(1).replace("&amp;", "&")
        seen: list[list[tuple[str, dict[str, Any]]]] = [[], []]

        async def watch(i: int) -> None:
            async with c.stream("GET", url) as response:
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
                async for item in sse(response):
                    seen[i].append(item)
                    if item[0] == "end":
                        return

        watchers = [asyncio.create_task(watch(i)) for i in range(2)]
        await asyncio.sleep(0.5)
        gate.set()  # the model answers: the agent finishes, the run ends
        await asyncio.wait_for(asyncio.gather(*watchers), 20)
        js = await c.get("/static/inspector.js")
    assert js.status_code == 200 and "EventSource" in js.text
    for got in seen:
        kinds = [data.get("kind") for event, data in got if event == "run"]
        assert "agent_finished" in kinds and kinds[-1] == "run_finished", kinds
        assert got[-1][0] == "end"
        html = "".join(data.get("html", "") for _e, data in got)
        assert "done &lt;b&gt;live&lt;/b&gt;" in html and "<b>live" not in html
    assert inspector.live._feeds == {}  # the shared feed stopped with its last page


def test_run_path_opens_its_run_only() -> None:
    path = run_path(KEY, "run_1", 60)
    t = path.split("?t=", 1)[1]
    assert KEY.opens_run(t, "run_1") and not KEY.opens_run(t, "run_2")


async def test_questions_answers_and_budget_pauses(make_services, settings, real_redis) -> None:
    """An agent asks a person, is answered, then pauses at the run's token budget until a
    person extends it: the page shows the question, the answer and the pause."""

    def respond(r: LLMRequest) -> Reply:
        asked = scenarios.calls_made(r, "ask_user")
        spent = scenarios.calls_made(r, "calculate")
        if asked == 0:
            return Reply(calls=(call("ask_user", {"question": "Which city <i>first</i>?"}),))
        if spent >= 2:
            return Reply(calls=(call("finish", {"result": "done"}),), prompt_tokens=900)
        expression = {"expression": f"{spent} + 1"}
        return Reply(calls=(call("calculate", expression),), prompt_tokens=900)

    svc = make_services(settings, ScriptedModel(responder=respond), redis=real_redis)
    spec = AgentSpec(name="Asker", role="solo", tools=("ask_user", "calculate", "finish"))
    run_id = await control.propose_run(
        svc,
        "Ask, then spend",
        spec,
        requested_by="U-ana",
        budget=RunBudget(tokens=1500, cost_usd=1.0, wall_clock_s=600),
    )
    assert (await control.approve_run(svc, run_id, "U-ana")).ok
    for _ in range(200):
        if await open_questions(svc, run_id):
            break
        await asyncio.sleep(0.05)
    assert (await answer_question(svc, run_id, "Lisbon <b>first</b>", "U-ana")).ok
    for _ in range(200):
        if (await svc.store.get_run(run_id)).paused:
            break
        await asyncio.sleep(0.05)
    assert (await budget.extend_run(svc, run_id, "U-ana", tokens=10_000)).ok
    await collect(svc, run_id, timeout_s=20)

    app, _ = app_for(settings, real_redis)
    async with client(app) as c:
        page = await c.get(f"/runs/{run_id}", params={"t": token(run_id)})
    questions = page.text.split('id="questions"', 1)[1].split("</section>", 1)[0]
    assert "Which city &lt;i&gt;first&lt;/i&gt;?" in questions
    assert "U-ana answered: Lisbon &lt;b&gt;first&lt;/b&gt;" in questions
    assert "paused at its tokens budget" in questions
    assert "ask_user" in page.text and "waiting_human" in page.text  # turns, history
