"""Caramba as a full MCP client, against the tests' own server written with the SDK
(tests/fakes/mcp_server.py, 2026-07-28 protocol): progress extending a call, a changed
tool list picked up, a server that comes up late gaining its tools, resources read and
resource links named, elicitation routed to the call's run, the server's stderr in the
log, and an image reaching the model as image content and the run's outputs/."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from core.config import Settings
from core.llm.vision import sees_images, wire_messages
from core.tools.elicit import ElicitAnswer, ElicitRequest
from core.types.chat import ChatMessage
from core.types.events import ToolProgress
from tests.conftest import make_settings
from tests.integration.test_mcp import (
    KEY_VAR,
    HttpServer,
    hub_of,
    mcp_services,
    mcp_settings,
    run_tool,
    stdio,
)

pytestmark = pytest.mark.integration
__all__ = ["mcp_services"]  # the fixture, used by name


def with_mcp(llm: dict[str, Any] | None = None, **mcp: Any) -> Settings:
    """Settings with ``[mcp]`` as given (servers included) and, optionally, ``[llm]``."""
    mcp = {"connect_timeout_s": 10.0, "call_timeout_s": 5.0, **mcp}
    return make_settings(mcp=mcp, **({"llm": llm} if llm else {}))


async def until(check: Any, timeout_s: float = 10.0) -> None:
    """Wait for ``check()`` to be true (a background re-listing, a retry)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out waiting"
        await asyncio.sleep(0.05)


async def test_progress_extends_a_call_past_its_idle_limit(mcp_services: Any) -> None:
    svc = await mcp_services(mcp_settings(call_timeout_s=1.0, fake=stdio()))
    # 4 steps of 0.6 s: 2.4 s in all, past the 1 s idle limit, each step reported.
    done = await run_tool(svc, "fake__steps", count=4, every=0.6)
    assert (done.ok, done.content) == (True, "4 steps done")
    progress = [e for _, e in await svc.store.events.read("run-mcp") if isinstance(e, ToolProgress)]
    assert progress and progress[0].tool == "fake__steps" and progress[0].total == 4
    assert progress[0].message.startswith("step ")
    # Without progress the same limit ends a call that takes as long.
    quiet = await run_tool(svc, "fake__slow", seconds=2.4)
    assert not quiet.ok and "did not answer slow within 1 s" in quiet.content


async def test_the_hard_cap_ends_a_call_that_keeps_reporting(mcp_services: Any) -> None:
    settings = with_mcp(call_timeout_s=1.0, call_cap_s=1.5, servers={"fake": stdio()})
    svc = await mcp_services(settings)
    capped = await run_tool(svc, "fake__steps", count=10, every=0.4)
    assert not capped.ok
    assert "still at work on steps after 1.5 s" in capped.content


async def test_a_changed_tool_list_is_picked_up(mcp_services: Any) -> None:
    svc = await mcp_services(mcp_settings(fake=stdio()))
    assert "fake__newbie" not in svc.tools
    grown = await run_tool(svc, "fake__grow", called="newbie")
    assert grown.content == "newbie added"
    await until(lambda: "fake__newbie" in svc.tools)
    hello = await run_tool(svc, "fake__newbie")
    assert (hello.ok, hello.content) == (True, "hello from newbie")


async def test_a_server_down_at_start_gains_its_tools_when_it_comes_up(
    mcp_services: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_VAR, "k")
    server = HttpServer("X-Api-Key=k")
    config = {"transport": "http", "url": server.url, "headers_from": {"X-Api-Key": KEY_VAR}}
    svc = await mcp_services(with_mcp(retry_s=0.2, retry_max_s=0.5, servers={"web": config}))
    assert f"cannot reach {server.url}" in svc.tools.unavailable["web__*"]
    assert "web__add" not in svc.tools
    server.start()
    try:
        await until(lambda: "web__add" in svc.tools, timeout_s=20)
        assert "web__*" not in svc.tools.unavailable
        assert (await run_tool(svc, "web__add", a=1, b=2)).content == "3"
    finally:
        server.kill()


async def test_resources_are_read_and_links_name_the_reader(mcp_services: Any) -> None:
    svc = await mcp_services(mcp_settings(fake=stdio()))
    reader = svc.tools.get("fake__read_resource")
    assert reader is not None and reader.read_only and reader.server == "fake"
    assert "notes://readme" in reader.description and "notes://pixel" in reader.description
    text = await run_tool(svc, "fake__read_resource", uri="notes://readme")
    assert text.ok and "The fake server's notes." in text.content
    blob = await run_tool(svc, "fake__read_resource", uri="notes://pixel")
    assert blob.ok and "[image saved as outputs/fake-resource-" in blob.content
    missing = await run_tool(svc, "fake__read_resource", uri="notes://nothing")
    assert not missing.ok and "could not read notes://nothing" in missing.content
    linked = await run_tool(svc, "fake__link")
    assert linked.content == (
        "[link to resource readme at notes://readme: the readme; read it with fake__read_resource]"
    )


async def test_elicitation_reaches_the_calls_run_and_its_answer_the_server(
    mcp_services: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The protocol side: the server's question reaches ``core.tools.elicit.elicit`` with
    the calling turn's context; accept and decline go back. (The chat form itself is
    tested with the adapters.)"""
    asked: list[tuple[str, ElicitRequest]] = []
    answers = [ElicitAnswer("accept", {"name": "Ada"}), ElicitAnswer("decline")]

    async def person(ctx: Any, request: ElicitRequest) -> ElicitAnswer:
        asked.append((ctx.run_id, request))
        return answers[len(asked) - 1]

    monkeypatch.setattr("core.tools.mcp.inflight.elicit", person)
    svc = await mcp_services(mcp_settings(fake=stdio()))
    assert (await run_tool(svc, "fake__greet")).content == "Hello, Ada!"
    assert (await run_tool(svc, "fake__greet")).content == "No name given (decline)."
    run_id, request = asked[0]
    assert (run_id, request.server, request.message) == ("run-mcp", "fake", "What is your name?")
    assert request.schema is not None and "name" in request.schema["properties"]


async def test_a_stdio_servers_stderr_goes_to_the_log(
    mcp_services: Any, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    noisy = stdio(args=["-c", "import sys; print('warming up the flux', file=sys.stderr)"])
    caplog.set_level(logging.INFO, logger="core.tools.mcp.server")
    svc = await mcp_services(mcp_settings(noisy=noisy))
    assert "noisy__*" in svc.tools.unavailable  # it exits at once
    await hub_of(svc).aclose()
    await until(lambda: "warming up the flux" in caplog.text)
    assert "MCP server 'noisy': warming up the flux" in caplog.text
    assert "warming up the flux" not in capfd.readouterr().err


def test_images_follow_tool_results_for_a_model_that_sees_them() -> None:
    url = "data:image/png;base64,iVBORw0KGgo="
    thread = [
        ChatMessage(role="user", content="draw"),
        ChatMessage(role="assistant", content=None),
        ChatMessage(role="tool", tool_call_id="c1", name="t", content="[image]", images=(url,)),
        ChatMessage(role="assistant", content="done"),
    ]
    assert sees_images("openai/gpt-4o-mini") and not sees_images("openai/gpt-3.5-turbo")
    shown = wire_messages(thread, "openai/gpt-4o")
    assert [m["role"] for m in shown] == ["user", "assistant", "tool", "user", "assistant"]
    assert shown[3]["content"][1] == {"type": "image_url", "image_url": {"url": url}}
    assert "images" not in shown[2]
    blind = wire_messages(thread, "openai/gpt-3.5-turbo")
    assert [m["role"] for m in blind] == ["user", "assistant", "tool", "assistant"]


async def test_an_image_reaches_the_model_and_the_runs_outputs(mcp_services: Any) -> None:
    from bots.chat.outputs import pick
    from bots.chat.ports import Limits
    from core.process.embedded import embedded_services
    from core.runs.control import start_run
    from core.types import AgentSpec
    from tests.fakes.llm_server import FakeLLMServer, FakeReply
    from tests.helpers import collect

    async with FakeLLMServer(models=("gpt-4o",)) as llm:
        llm.script(
            FakeReply(tool_calls=[("fake__picture", {})]),
            FakeReply(tool_calls=[("finish", {"result": "a pixel"})]),
        )
        model = {"model": "openai/gpt-4o", "api_base": llm.base_url, "api_key_env": ""}
        settings = with_mcp(llm=model, servers={"fake": stdio()})

        spec = AgentSpec(name="looker", tools=("fake__picture", "finish"))
        async with embedded_services(settings, None) as svc:
            run_id = await start_run(svc, "look at the picture", spec)
            events = await collect(svc, run_id, timeout_s=30)
            files = await svc.workspace.files(run_id)
        assert events[-1].kind == "run_finished"
        second = llm.requests[1]["messages"]
        shown = [m for m in second if m["role"] == "user" and isinstance(m["content"], list)]
        assert len(shown) == 1
        image = shown[0]["content"][1]
        assert image["type"] == "image_url"
        assert image["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")
        tool_reply = next(m for m in second if m["role"] == "tool")
        assert "[image saved as outputs/fake-picture-" in tool_reply["content"]
        sent, _ = pick(files, Limits(message_chars=3000))
        assert [f.path for f in sent] and sent[0].path.startswith("outputs/fake-picture-")


async def test_doctor_says_what_a_server_wrote_when_it_does_not_start() -> None:
    from core.process.doctor_mcp import check_mcp
    from core.process.doctor_types import Level

    crash = "import sys; print('config file /etc/nowhere.json not found', file=sys.stderr)"
    (fake, broken) = await check_mcp(
        with_mcp(servers={"fake": stdio(), "broken": stdio(args=["-c", crash])})
    )
    assert fake.level is Level.OK and fake.detail.startswith("13 tools (add, crash")
    assert broken.level is Level.FAIL
    assert "exited or closed the connection while starting" in broken.detail
    assert "It wrote: config file /etc/nowhere.json not found" in broken.detail


async def test_progress_shows_in_the_runs_status_line() -> None:
    from bots.chat.ports import Limits, Place
    from bots.chat.relay import ThreadRelay
    from bots.slack.render import SlackRenderer
    from core.types.events import AgentCreated, RunStarted

    relay = ThreadRelay(Place("C1", "1.1"), "r", SlackRenderer(), Limits(message_chars=3000))
    await relay.on_event(RunStarted(run_id="r", task="t"))
    await relay.on_event(AgentCreated(run_id="r", agent_id="a", name="Ana", role="x", model="m"))
    relay.take()
    relay.last_update = 0.0  # a second has passed since the last edit
    progress = ToolProgress(
        run_id="r", agent_id="a", tool="srv__render", progress=3, total=5, message="frames"
    )
    await relay.on_event(progress)
    _, status = relay.take()
    assert status is not None
    assert status.text.startswith("Running: Ana is using `srv__render (3/5 · frames)`")
