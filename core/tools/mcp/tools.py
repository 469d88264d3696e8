"""MCP servers' tools in the registry: ``<server>__<tool>``, their schema as the server
gives it, read-only from the tool's annotations or from config, every failure a tool
error the model reads (never a crashed turn). ``core.tools.mcp.live`` keeps them in the
registry."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from mcp_types import Tool as McpTool

from core.agent.context import ToolContext
from core.config_tools import McpServer
from core.errors import ToolRetry
from core.tools.mcp.connect import McpServerError
from core.tools.mcp.connection import McpConnection
from core.tools.mcp.results import error_text, result_text
from core.tools.registry import RawArguments, Tool

# What OpenAI allows as a function name: ^[a-zA-Z0-9_-]{1,64}$.
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")
MAX_NAME = 64
CATEGORY = "mcp"


def tool_name(server: str, tool: str) -> str:
    """``<server>__<tool>`` in the characters a model's function name may use; a name too
    long keeps its start and ends with a short hash of the whole (so it stays unique)."""
    name = _NOT_ALLOWED.sub("_", f"{server}__{tool}")
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def unavailable_name(server: str) -> str:
    """How a server's tools are listed while none of them is known (it never started)."""
    return f"{_NOT_ALLOWED.sub('_', server)}__*"


def is_read_only(server: McpServer, tool: McpTool) -> bool:
    """Config's ``read_only`` ("*" or the tool's name) wins; else the tool's own hint."""
    if "*" in server.read_only or tool.name in server.read_only:
        return True
    return bool(tool.annotations is not None and tool.annotations.read_only_hint)


def hints(server: McpServer, tool: McpTool) -> tuple[bool, bool]:
    """``(destructive, open_world)`` from the tool's annotations, a hint left out counting
    as the MCP spec's default (true); a read-only tool destroys nothing."""
    notes = tool.annotations
    destructive = notes is None or notes.destructive_hint is None or notes.destructive_hint
    open_world = notes is None or notes.open_world_hint is None or notes.open_world_hint
    return (not is_read_only(server, tool) and bool(destructive)), bool(open_world)


def mcp_tool(conn: McpConnection, tool: McpTool, *, as_task: bool = False) -> Tool:
    """The registry's :class:`Tool` calling ``tool`` on ``conn``'s server (as a task if
    ``as_task``)."""
    server, remote = conn.name, tool.name
    read_only = is_read_only(conn.server, tool)
    name = tool_name(server, remote)

    async def call(ctx: ToolContext, arguments: dict[str, Any]) -> str:
        try:
            result = await conn.call(
                remote, arguments, repeatable=read_only, ctx=ctx, shown_as=name, as_task=as_task
            )
        except McpServerError as exc:
            raise ToolRetry(str(exc)) from exc
        if result.is_error:
            raise ToolRetry(
                f"{remote} on MCP server {server!r} failed: {error_text(result)}\n"
                "Fix the arguments and try again, or go on another way."
            )
        return await result_text(ctx, server, remote, result)

    schema = tool.input_schema or {"type": "object", "properties": {}}
    destructive, open_world = hints(conn.server, tool)
    title = tool.title or (tool.annotations.title if tool.annotations else None) or remote
    return Tool(
        name=name,
        description=(tool.description or "").strip() or f"{title} (from MCP server {server}).",
        fn=call,
        args_model=RawArguments,
        read_only=read_only,
        takes_context=True,
        category=CATEGORY,
        network=conn.server.transport == "http",
        server=server,
        destructive=destructive,
        open_world=open_world,
        parameters=schema,
    )
