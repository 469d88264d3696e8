"""Against ``@modelcontextprotocol/server-everything`` 2026.8.31, the MCP reference server
(nobody on the team wrote it; installed from npm, tests/fakes/mcp_everything.py), over
stdio on the 2025-11-25 protocol it speaks: every tool listed (the elicitation ones, shown
only to a client that declares elicitation), a task-augmented tool completing (with a
question on the way), progress extending a call, an image saved and staged for the model,
resources read and links named, a URL elicitation."""

from __future__ import annotations

from typing import Any

import pytest

from core.tools.elicit import ElicitAnswer, ElicitRequest
from core.types.events import ToolProgress
from tests.fakes.mcp_everything import everything_command
from tests.integration.test_mcp import mcp_services, mcp_settings, run_tool
from tests.integration.test_mcp_client import until

pytestmark = pytest.mark.integration
__all__ = ["mcp_services"]  # the fixture, used by name

# What it offers a client declaring elicitation (not sampling, not roots): the
# sampling and roots tools stay hidden; simulate-research-query requires a task.
EVERYTHING_TOOLS = {
    "echo", "get-annotated-message", "get-env", "get-resource-links",
    "get-resource-reference", "get-structured-content", "get-sum", "get-tiny-image",
    "gzip-file-as-resource", "toggle-simulated-logging", "toggle-subscriber-updates",
    "trigger-long-running-operation", "trigger-elicitation-request",
    "trigger-url-elicitation", "simulate-research-query",
}  # fmt: skip


@pytest.fixture(scope="module")
def everything() -> dict[str, Any]:
    try:
        command, *args = everything_command()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    return {"transport": "stdio", "command": command, "args": args}


async def test_every_tool_is_listed_the_elicitation_ones_included(
    mcp_services: Any, everything: dict[str, Any]
) -> None:
    svc = await mcp_services(mcp_settings(everything=everything))
    names = {"everything__" + n for n in EVERYTHING_TOOLS} | {"everything__read_resource"}
    # It registers the tools that depend on the client's capabilities after the
    # handshake and says so (list_changed): they are all there once it settled.
    await until(lambda: names <= set(svc.tools.names()))
    offered = {t.name for t in svc.tools.tools() if t.server == "everything"}
    assert offered == names
    assert not any(n.startswith("everything__") for n in svc.tools.unavailable)
    assert "everything__trigger-sampling-request" not in offered  # sampling: not declared
    assert "everything__get-roots-list" not in offered  # roots: not declared
    echo = svc.tools.get("everything__echo")
    assert echo is not None and echo.read_only
    assert (await run_tool(svc, "everything__echo", message="hi")).content == "Echo: hi"


async def test_a_task_augmented_tool_completes(
    mcp_services: Any, everything: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[ElicitRequest] = []

    async def person(ctx: Any, request: ElicitRequest) -> ElicitAnswer:
        asked.append(request)
        return ElicitAnswer("accept", {"interpretation": "snake"})

    monkeypatch.setattr("core.tools.mcp.inflight.elicit", person)
    # Each stage takes 1 s: four of them outlast the 3 s idle limit; status changes
    # count as progress.
    svc = await mcp_services(mcp_settings(call_timeout_s=3.0, everything=everything))
    await until(lambda: "everything__simulate-research-query" in svc.tools)
    plain = await run_tool(svc, "everything__simulate-research-query", topic="tides")
    assert plain.ok, plain.content
    assert "# Research Report: tides" in plain.content
    events = [e for _, e in await svc.store.events.read("run-mcp") if isinstance(e, ToolProgress)]
    # Its stages as progress (shown at most about once a second).
    assert any(e.message.endswith("...") for e in events), events
    # An ambiguous topic: the server asks (through tasks/result) and reads the answer.
    asked_for = await run_tool(
        svc, "everything__simulate-research-query", topic="python", ambiguous=True
    )
    assert asked_for.ok and "python (snake)" in asked_for.content
    assert asked and "could have multiple interpretations" in asked[0].message
    assert asked[0].schema is not None and "interpretation" in asked[0].schema["properties"]


async def test_progress_extends_a_long_running_operation(
    mcp_services: Any, everything: dict[str, Any]
) -> None:
    svc = await mcp_services(mcp_settings(call_timeout_s=1.5, everything=everything))
    done = await run_tool(svc, "everything__trigger-long-running-operation", duration=4, steps=8)
    assert done.ok, done.content
    assert "Long running operation completed. Duration: 4 seconds, Steps: 8." in done.content
    events = [e for _, e in await svc.store.events.read("run-mcp") if isinstance(e, ToolProgress)]
    assert events and events[0].total == 8


async def test_images_resources_and_links(mcp_services: Any, everything: dict[str, Any]) -> None:
    from core.agent.context import ToolContext
    from core.types import AgentSpec
    from core.types.agent import AgentState
    from core.types.chat import ToolCall

    svc = await mcp_services(mcp_settings(everything=everything))
    state = AgentState(spec=AgentSpec(name="tester"), run_id="run-mcp")
    ctx = ToolContext(svc, state)
    name = "everything__get-tiny-image"
    call = ToolCall(id="c1", name=name, arguments="{}")
    image = await svc.tools.execute(ctx, call, [name], svc.prompts, max_chars=4000)
    assert image.ok and "[image saved as outputs/everything-get-tiny-image-" in image.content
    (path, url) = ctx.images[0]
    assert path in [f.path for f in await svc.workspace.files("run-mcp")]
    assert len(ctx.images) == 1 and url.startswith("data:image/png;base64,")

    doc = "demo://resource/static/document/architecture.md"
    read = await run_tool(svc, "everything__read_resource", uri=doc)
    assert read.ok and read.content.startswith(f"[resource {doc}]")
    links = await run_tool(svc, "everything__get-resource-links", count=2)
    assert links.ok and "read it with everything__read_resource" in links.content
    structured = await run_tool(svc, "everything__get-structured-content", location="New York")
    assert structured.ok and '"temperature"' in structured.content


async def test_a_url_elicitation_reaches_the_run(
    mcp_services: Any, everything: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[ElicitRequest] = []

    async def person(ctx: Any, request: ElicitRequest) -> ElicitAnswer:
        asked.append(request)
        return ElicitAnswer("decline")

    monkeypatch.setattr("core.tools.mcp.inflight.elicit", person)
    svc = await mcp_services(mcp_settings(everything=everything))
    await until(lambda: "everything__trigger-url-elicitation" in svc.tools)
    url = "https://example.com/authorize"
    result = await run_tool(svc, "everything__trigger-url-elicitation", url=url)
    assert asked and asked[0].url is not None and asked[0].schema is None, result.content
    assert asked[0].server == "everything"


async def test_one_http_server_shared_by_two_worker_processes(
    mcp_services: Any, everything: dict[str, Any]
) -> None:
    """server-everything started once over streamable HTTP; two processes' services (as two
    workers would hold them) each open their own session to it."""
    import os

    from tests.integration.processes import Process, free_port

    port = free_port()
    env = {**os.environ, "PORT": str(port)}
    server = Process([everything["command"], "streamableHttp"], env, "mcp-everything-http")
    try:
        server.wait_for(f"listening on port {port}", timeout=30)
        shared = {"transport": "http", "url": f"http://127.0.0.1:{port}/mcp"}
        first = await mcp_services(mcp_settings(everything=shared))
        second = await mcp_services(mcp_settings(everything=shared))
        for svc in (first, second):
            tool = svc.tools.get("everything__get-sum")
            assert tool is not None and tool.network
            assert (await run_tool(svc, "everything__get-sum", a=2, b=3)).content == (
                "The sum of 2 and 3 is 5."
            )
    finally:
        server.kill()
        server.cleanup()


async def test_a_task_given_up_is_cancelled_on_the_server(
    mcp_services: Any, everything: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    caplog.set_level(logging.INFO, logger="core.tools.mcp.tasks")
    # Four 1 s stages against a 2.5 s cap: the call is given up, the task cancelled.
    settings = mcp_settings(call_timeout_s=2.0, everything=everything)
    settings = settings.model_copy(
        update={"mcp": settings.mcp.model_copy(update={"call_cap_s": 2.5})}
    )
    svc = await mcp_services(settings)
    await until(lambda: "everything__simulate-research-query" in svc.tools)
    given_up = await run_tool(svc, "everything__simulate-research-query", topic="tides")
    assert not given_up.ok and "simulate-research-query" in given_up.content
    await until(lambda: "cancelled" in caplog.text)
    assert "MCP task" in caplog.text
