"""MCP tools without a server: names, read-only rules, secrets from the environment, a
tool with a given JSON schema through the registry, and what results become."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mcp_types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from mcp_types import Tool as McpTool

from core.agent.context import ToolContext
from core.config_tools import McpServer
from core.errors import ConfigError, ToolRetry
from core.prompts import PromptLibrary
from core.tools.mcp.connect import McpServerError, secrets
from core.tools.mcp.results import result_text
from core.tools.mcp.tools import is_read_only, tool_name, unavailable_name
from core.tools.registry import RawArguments, Tool, ToolRegistry
from core.types import AgentSpec
from core.types.agent import AgentState
from core.types.chat import ToolCall
from core.workspace.base import WorkspaceCaps
from core.workspace.local_store import LocalWorkspace
from tests.conftest import make_settings

OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_names_are_namespaced_and_what_a_model_accepts() -> None:
    assert tool_name("files", "read_file") == "files__read_file"
    assert tool_name("my.files", "read file/v2") == "my_files__read_file_v2"
    assert unavailable_name("my.files") == "my_files__*"
    long_a, long_b = tool_name("s", "x" * 80 + "a"), tool_name("s", "x" * 80 + "b")
    assert long_a != long_b
    for name in (long_a, long_b, tool_name("ü" * 10, "ß")):
        assert OPENAI_NAME.match(name), name


def mcp(name: str, read_only_hint: bool | None = None) -> McpTool:
    notes = None if read_only_hint is None else ToolAnnotations(read_only_hint=read_only_hint)
    return McpTool(name=name, input_schema={"type": "object"}, annotations=notes)


def test_read_only_from_the_annotations_unless_config_says_so() -> None:
    plain = McpServer(command="x")
    assert is_read_only(plain, mcp("look", True))
    assert not is_read_only(plain, mcp("change", False))
    assert not is_read_only(plain, mcp("unsaid"))
    assert is_read_only(McpServer(command="x", read_only=("unsaid",)), mcp("unsaid"))
    assert is_read_only(McpServer(command="x", read_only=("*",)), mcp("change", False))


def test_a_server_needs_its_command_or_url() -> None:
    with pytest.raises(ConfigError, match="an http MCP server needs its url"):
        make_settings(mcp={"servers": {"t": {"transport": "http"}}})
    with pytest.raises(ConfigError, match="a stdio MCP server needs its command"):
        make_settings(mcp={"servers": {"t": {"args": ["x"]}}})


def test_secrets_come_from_the_environment_and_never_show() -> None:
    stdio = McpServer(command="x", env_from={"TOKEN": "MY_TOKEN"})
    assert secrets("gh", stdio, {"MY_TOKEN": "s3cret"}) == {"TOKEN": "s3cret"}
    http = McpServer(transport="http", url="http://h/mcp", headers_from={"Authorization": "AUTH"})
    assert secrets("t", http, {"AUTH": "Bearer x"}) == {"Authorization": "Bearer x"}
    with pytest.raises(McpServerError) as missing:
        secrets("t", http, {"MY_TOKEN": "s3cret"})
    assert "set the variable AUTH" in str(missing.value)
    assert "s3cret" not in str(missing.value)


async def test_a_tool_with_a_given_schema_gets_the_arguments_as_one_dict() -> None:
    seen: list[dict[str, Any]] = []

    async def fn(ctx: ToolContext, arguments: dict[str, Any]) -> str:
        seen.append(arguments)
        if arguments.get("bad"):
            raise ToolRetry("the server said no")
        return "done"

    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    t = Tool(
        name="srv__search", description="Search.", fn=fn, args_model=RawArguments,
        read_only=True, takes_context=True, category="mcp", server="srv", parameters=schema,
    )  # fmt: skip
    assert t.openai_schema()["function"]["parameters"] == schema
    registry, prompts = ToolRegistry([t]), PromptLibrary()
    ctx = ToolContext(SimpleNamespace(), AgentState(spec=AgentSpec(name="a"), run_id="r"))  # type: ignore[arg-type]

    async def run(arguments: str) -> tuple[bool, str]:
        r = await registry.execute(ctx, ToolCall(id="1", name=t.name, arguments=arguments),
                                   [t.name], prompts, 1000)  # fmt: skip
        return r.ok, r.content

    assert await run('{"q": "otters", "limit": 3}') == (True, "done")
    assert seen == [{"q": "otters", "limit": 3}]
    assert await run('{"bad": true}') == (False, "the server said no")
    ok, text = await run("[1, 2]")
    assert not ok and "arguments must be a JSON object" in text


async def test_results_become_text_and_workspace_files(tmp_path: Path) -> None:
    workspace = LocalWorkspace(tmp_path, WorkspaceCaps(10_000, 100_000, 10))
    ctx = ToolContext(
        SimpleNamespace(workspace=workspace, settings=make_settings()),  # type: ignore[arg-type]
        AgentState(spec=AgentSpec(name="a"), run_id="run1"),
    )
    png = b"\x89PNG\r\n\x1a\n" + b"0" * 100
    result = CallToolResult(
        content=[
            TextContent(text="Here it is."),
            ImageContent(data=base64.b64encode(png).decode(), mime_type="image/png"),
            EmbeddedResource(resource=TextResourceContents(uri="file:///a.txt", text="hello")),
            ResourceLink(name="big.csv", uri="file:///big.csv"),
        ]
    )
    text = await result_text(ctx, "files", "get", result)
    saved = [f.path for f in await workspace.files("run1")]
    # Under outputs/ (the run's files for the thread), and staged for a model that sees.
    assert len(saved) == 1 and re.fullmatch(r"outputs/files-get-[0-9a-f]{12}\.png", saved[0])
    assert [path for path, _ in ctx.images] == saved
    assert await workspace.read("run1", saved[0]) == png
    assert text.splitlines() == [
        "Here it is.",
        f"[image saved as {saved[0]} (image/png, 108 B)]",
        "[resource file:///a.txt]",
        "hello",
        "[link to resource big.csv at file:///big.csv; read it with files__read_resource]",
    ]
    too_big = CallToolResult(
        content=[ImageContent(data=base64.b64encode(b"1" * 20_000).decode(), mime_type="image/png")]
    )
    note = await result_text(ctx, "files", "get", too_big)
    assert note.startswith("[image (image/png, 19.5 KB) not saved: ")
    assert await result_text(ctx, "files", "get", CallToolResult(content=[])) == (
        "(the tool returned nothing)"
    )


async def test_a_tool_that_requires_tasks_is_not_offered_by_a_server_without_them() -> None:
    from mcp_types import ServerCapabilities, ToolExecution

    from core.tools.mcp.live import LiveServer

    client = SimpleNamespace(server_capabilities=ServerCapabilities())

    async def connected() -> Any:
        return client

    conn = SimpleNamespace(name="srv", server=McpServer(command="x"), client=connected)
    needs = McpTool(name="research", input_schema={"type": "object"},
                    execution=ToolExecution(task_support="required"))  # fmt: skip
    may = McpTool(name="quick", input_schema={"type": "object"},
                  execution=ToolExecution(task_support="optional"))  # fmt: skip
    registry = ToolRegistry()
    live = LiveServer(registry, make_settings(), conn, SimpleNamespace())  # type: ignore[arg-type]
    await live.apply([needs, may])
    assert registry.names() == ["srv__quick"]  # optional: called the plain way here
    assert registry.unavailable["srv__research"] == (
        "MCP server srv says research must run as a task, but it does not offer tasks for "
        "tool calls"
    )
