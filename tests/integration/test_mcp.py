"""MCP servers' tools through real servers written with the SDK (tests/fakes/mcp_server.py),
over stdio (a child process per session) and streamable HTTP (uvicorn in a child process),
called through the registry with a real ToolContext, and by an agent's turn."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from core.config import Settings
from core.llm.scripted import Reply, ScriptedModel, call
from core.process.tools_start import _HUBS, all_tools, start_tools, stop_tools
from core.services import Services
from core.tools.registry import ToolResult
from core.types import AgentSpec
from core.types.agent import AgentState
from core.types.chat import ToolCall
from core.types.events import RunFinished, ToolCalled
from core.types.run import RunStatus
from tests.conftest import ServicesFactory, make_settings
from tests.integration.processes import Process, free_port, worker_env

pytestmark = pytest.mark.integration

FAKE = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")
KEY_VAR = "CARAMBA_TEST_MCP_KEY"


def stdio(**extra: Any) -> dict[str, Any]:
    return {"transport": "stdio", "command": sys.executable, "args": [FAKE], **extra}


def mcp_settings(call_timeout_s: float = 5.0, **servers: dict[str, Any]) -> Settings:
    return make_settings(
        mcp={"connect_timeout_s": 10.0, "call_timeout_s": call_timeout_s, "servers": servers}
    )


@pytest.fixture
async def mcp_services(make_services: ServicesFactory) -> AsyncIterator[Any]:
    """Services whose tools include the MCP servers of the given settings (started as a
    process starts them); the sessions are closed afterwards."""
    started: list[Services] = []

    async def make(settings: Settings) -> Services:
        svc = make_services(settings, ScriptedModel())
        await start_tools(svc)
        started.append(svc)
        return svc

    yield make
    for svc in started:
        await stop_tools(svc)


async def run_tool(svc: Services, name: str, **args: Any) -> ToolResult:
    """One call through ``ToolRegistry.execute`` with a real ToolContext."""
    from core.agent.context import ToolContext

    state = AgentState(spec=AgentSpec(name="tester", tools=(name,)), run_id="run-mcp")
    ctx = ToolContext(svc, state)
    tc = ToolCall(id="c1", name=name, arguments=json.dumps(args))
    return await svc.tools.execute(ctx, tc, [name], svc.prompts, max_chars=4000)


def hub_of(svc: Services) -> Any:
    return _HUBS[svc.tools]


# --- stdio --------------------------------------------------------------------------------


async def test_stdio_tools_calls_errors_and_timeouts(mcp_services: Any) -> None:
    svc = await mcp_services(mcp_settings(call_timeout_s=1.0, fake=stdio(exclude=["crash"])))
    mcp = {t.name: t for t in svc.tools.tools() if t.server}
    assert set(mcp) == {
        "fake__add", "fake__remember", "fake__fail", "fake__refuse", "fake__slow",
        "fake__whoami", "fake__picture", "fake__steps", "fake__grow", "fake__greet",
        "fake__link", "fake__read_resource",
    }  # fmt: skip
    add, remember = mcp["fake__add"], mcp["fake__remember"]
    assert (add.read_only, add.network, add.server, add.category) == (True, False, "fake", "mcp")
    assert remember.read_only is False
    assert "calculate" in svc.tools  # the built-in tools are still there
    schema = add.openai_schema()["function"]
    assert schema["description"] == "Add two whole numbers."
    assert schema["parameters"]["required"] == ["a", "b"]
    assert schema["parameters"]["properties"]["a"]["type"] == "integer"

    ok = await run_tool(svc, "fake__add", a=2, b=40)
    assert (ok.ok, ok.content) == (True, "42")

    failed = await run_tool(svc, "fake__fail", reason="the disk is full")
    assert not failed.ok
    assert "fail on MCP server 'fake' failed" in failed.content
    assert "cannot do it: the disk is full" in failed.content

    refused = await run_tool(svc, "fake__refuse")
    assert (refused.ok, refused.content) == (
        False, "MCP server 'fake' refused the call to refuse: not today"
    )  # fmt: skip

    slow = await run_tool(svc, "fake__slow", seconds=30)
    assert not slow.ok
    assert "MCP server 'fake' did not answer slow within 1 s" in slow.content

    # The session outlives a time-out and an error: the same server process answers.
    again = await run_tool(svc, "fake__add", a=1, b=1)
    assert again.content == "2"

    picture = await run_tool(svc, "fake__picture")
    assert picture.ok
    assert picture.content.startswith("a single pixel\n[image saved as outputs/fake-picture-")
    files = [f.path for f in await svc.workspace.files("run-mcp")]
    assert len(files) == 1 and files[0].startswith("outputs/") and files[0].endswith(".png")
    assert hub_of(svc).get("fake").connects == 1


async def test_a_killed_server_is_started_again(mcp_services: Any) -> None:
    svc = await mcp_services(mcp_settings(fake=stdio()))
    first = int((await run_tool(svc, "fake__whoami")).content)

    # Killed between calls: a read-only call reconnects and is made on the new server.
    os.kill(first, signal.SIGKILL)
    second = await run_tool(svc, "fake__whoami")
    assert second.ok and int(second.content) != first

    # Crashed in the middle of a call that changes things: a clear error, not repeated.
    crashed = await run_tool(svc, "fake__crash")
    assert not crashed.ok
    assert "MCP server 'fake' closed the connection during crash" in crashed.content
    assert "check before calling it again" in crashed.content

    # ... and the next call starts a new session.
    third = await run_tool(svc, "fake__remember", note="after the crash")
    assert (third.ok, third.content) == (True, "1 notes kept")
    assert hub_of(svc).get("fake").connects == 3


async def test_a_server_that_cannot_start_leaves_its_tools_unavailable(
    mcp_services: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_VAR, raising=False)
    settings = mcp_settings(
        files={"command": "no-such-mcp-server-here"},
        secret=stdio(env_from={"API_KEY": KEY_VAR}),
        off=stdio(enabled=False),
    )
    svc = await mcp_services(settings)
    assert not [t for t in svc.tools.tools() if t.server]
    assert svc.tools.unavailable["files__*"] == (
        "MCP server 'files' did not start: command 'no-such-mcp-server-here' not found "
        "(install it, or fix mcp.servers.files.command)"
    )
    assert f"set the variable {KEY_VAR}" in svc.tools.unavailable["secret__*"]
    assert (await run_tool(svc, "calculate", expression="1+2")).content == "1+2 = 3"
    # What `caramba tools` shows: the same reasons, and no session left open.
    listed = await all_tools(settings)
    assert set(listed.unavailable) >= {"files__*", "secret__*"}
    assert "off__*" not in listed.unavailable and listed not in _HUBS


# --- streamable HTTP ------------------------------------------------------------------------


class HttpServer:
    """The fake server over streamable HTTP in a child process, on a port of its own."""

    def __init__(self, header: str) -> None:
        self.port, self.header = free_port(), header
        self.proc: Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        args = [sys.executable, FAKE, "--http", str(self.port), "--header", self.header]
        self.proc = Process(args, worker_env(), "mcp-http")
        self.proc.wait_for("serving on", timeout=20)

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.cleanup()


@pytest.fixture(scope="module")
def http_server() -> Iterator[HttpServer]:
    server = HttpServer("X-Api-Key=open-sesame")
    server.start()
    yield server
    server.kill()


def http(server: HttpServer) -> dict[str, Any]:
    return {"transport": "http", "url": server.url, "headers_from": {"X-Api-Key": KEY_VAR}}


async def test_http_server_with_a_header_from_the_environment(
    mcp_services: Any, http_server: HttpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_VAR, "open-sesame")
    svc = await mcp_services(mcp_settings(web=http(http_server)))
    add = svc.tools.get("web__add")
    assert add is not None and (add.network, add.server, add.read_only) == (True, "web", True)
    assert (await run_tool(svc, "web__add", a=20, b=22)).content == "42"
    failed = await run_tool(svc, "web__fail", reason="no")
    assert not failed.ok and "cannot do it: no" in failed.content


async def test_http_server_refusing_the_credentials(
    mcp_services: Any, http_server: HttpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_VAR, "wrong")
    svc = await mcp_services(mcp_settings(web=http(http_server)))
    reason = svc.tools.unavailable["web__*"]
    assert reason == (
        f"MCP server 'web' did not start: {http_server.url} answered HTTP 401 "
        f"(check the credentials in {KEY_VAR})"
    )
    assert "wrong" not in reason
    monkeypatch.delenv(KEY_VAR)
    svc = await mcp_services(mcp_settings(web=http(http_server)))
    assert f"set the variable {KEY_VAR}" in svc.tools.unavailable["web__*"]


async def test_http_server_restarted_mid_session(
    mcp_services: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_VAR, "k")
    server = HttpServer("X-Api-Key=k")
    server.start()
    try:
        svc = await mcp_services(mcp_settings(web=http(server)))
        first = int((await run_tool(svc, "web__whoami")).content)
        server.kill()
        down = await run_tool(svc, "web__remember", note="while down")
        assert not down.ok and "it cannot be started again now" in down.content
        assert f"cannot reach {server.url}" in down.content
        server.start()
        back = await run_tool(svc, "web__whoami")
        assert back.ok and int(back.content) != first
    finally:
        server.kill()


# --- an agent's turn ------------------------------------------------------------------------


async def test_an_agent_uses_an_mcp_tool_in_embedded_mode() -> None:
    from core.process.embedded import run_embedded

    model = ScriptedModel().script(
        "adder",
        Reply(calls=(call("fake__add", {"a": 19, "b": 23}),)),
        Reply(calls=(call("finish", {"result": "19 + 23 = 42"}),)),
    )
    root = AgentSpec(name="adder", tools=("fake__add", "finish"), system_prompt="Add numbers.")
    run = await run_embedded(
        mcp_settings(fake=stdio()), "add 19 and 23", root, llm=model, timeout_s=30
    )
    assert run.status is RunStatus.COMPLETED, run
    offered = {t["function"]["name"] for t in model.requests[0].tools}
    assert "fake__add" in offered
    tool_replies = [m.content for m in model.requests[1].messages if m.role == "tool"]
    assert tool_replies == ["42"]


async def test_a_celery_worker_offers_mcp_tools_to_its_turns(real_redis: Any) -> None:
    from core.process.wiring import build_services
    from core.runs.control import start_run
    from tasks.app import runtime_of
    from tasks.scheduler import CeleryScheduler
    from tests.helpers import collect
    from tests.schedulers import celery_settings, celery_worker, worker_app

    # remember changes things (a destructive tool by the spec's defaults): no approval
    # asked here, this is about the worker's sessions (approvals: test_tool_approval).
    mcp = {"connect_timeout_s": 10.0, "call_timeout_s": 5.0, "servers": {"fake": stdio()}}
    no_asking = make_settings(mcp=mcp, tools={"approval": {"destructive": False}})
    settings = celery_settings(no_asking, real_redis.test_prefix)
    model = ScriptedModel().script(
        "adder",
        Reply(calls=(call("fake__remember", {"note": "from a worker"}),)),
        Reply(calls=(call("finish", {"result": "noted"}),)),
    )
    app = worker_app(settings, model)
    publisher = CeleryScheduler(app, settings)
    svc = build_services(settings, publisher, llm=model, redis=real_redis)
    await start_tools(svc)  # the publishing process checks the agents' tools
    spec = AgentSpec(name="adder", tools=("fake__remember", "finish"))
    try:
        async with celery_worker(app, concurrency=2):
            worker_tools = runtime_of(app)._svc.tools  # type: ignore[union-attr]
            assert "fake__remember" in worker_tools
            run_id = await start_run(svc, "remember something", spec)
            events = await collect(svc, run_id, timeout_s=20)
        # The worker closed its sessions on shutdown.
        assert worker_tools not in _HUBS
    finally:
        await stop_tools(svc)
        await publisher.aclose()
        app.close()
    called = [(e.tool, e.ok, e.result) for e in events if isinstance(e, ToolCalled)]
    assert called[0] == ("fake__remember", True, "1 notes kept")
    assert isinstance(events[-1], RunFinished) and events[-1].status is RunStatus.COMPLETED
