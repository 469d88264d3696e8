"""A real MCP server for the tests, written with the official SDK (``MCPServer``, the
FastMCP of mcp 2.x).

    python tests/fakes/mcp_server.py                  # over stdio
    python tests/fakes/mcp_server.py --http PORT [--header NAME=VALUE]

Over HTTP it serves streamable HTTP at ``http://127.0.0.1:PORT/mcp`` and prints
``serving on PORT`` once it accepts connections; with ``--header``, a request without
that header and value is answered 401.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import os
import sys
from typing import Annotated, Any

from mcp import MCPError
from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import INVALID_PARAMS, ImageContent, ResourceLink, TextContent, ToolAnnotations
from pydantic import BaseModel

# A 1×1 transparent PNG.
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

server = MCPServer("fake", log_level="WARNING")
notes: list[str] = []


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


# Adds a note, destroys nothing: no approval asked by default ([tools.approval]).
@server.tool(annotations=ToolAnnotations(destructive_hint=False))
def remember(note: str) -> str:
    """Remember a note for later; returns how many notes are kept."""
    notes.append(note)
    return f"{len(notes)} notes kept"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"cannot do it: {reason}")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def refuse() -> str:
    """Answers with a JSON-RPC error (a protocol error), not a tool result."""
    raise MCPError(code=INVALID_PARAMS, message="not today")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def slow(seconds: float) -> str:
    """Wait this many seconds, then answer."""
    await asyncio.sleep(seconds)
    return "done waiting"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def whoami() -> str:
    """This server's process id."""
    return str(os.getpid())


@server.tool()
def crash() -> str:
    """End the server's process in the middle of the call."""
    os._exit(3)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def picture() -> list[Any]:
    """A caption and a tiny PNG image."""
    data = base64.b64encode(PIXEL_PNG).decode()
    return [
        TextContent(text="a single pixel"),
        ImageContent(data=data, mime_type="image/png"),
    ]


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def steps(count: int, every: float, ctx: Context) -> str:
    """Work ``count`` steps of ``every`` seconds, reporting progress after each."""
    for done in range(1, count + 1):
        await asyncio.sleep(every)
        await ctx.report_progress(done, count, f"step {done}")
    return f"{count} steps done"


@server.tool()
async def grow(called: str, ctx: Context) -> str:
    """Add a tool ``called`` so (it says hello) and tell the client the list changed."""

    def hello() -> str:
        return f"hello from {called}"

    server.add_tool(hello, name=called, description=f"Say hello from {called}.")
    await ctx.notify_tools_changed()  # 2026 connections: their change stream
    with contextlib.suppress(Exception):  # older ones: a notification
        await ctx.session.send_tool_list_changed()
    return f"{called} added"


class Name(BaseModel):
    name: str


def _ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@server.tool()
def greet(answer: Annotated[ElicitationResult[Name], Resolve(_ask_name)]) -> str:
    """Ask the person their name (a form), then greet them."""
    if isinstance(answer, AcceptedElicitation):
        return f"Hello, {answer.data.name}!"
    return f"No name given ({answer.action})."


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def link() -> list[Any]:
    """A link to the readme resource."""
    return [ResourceLink(name="readme", uri="notes://readme", description="the readme")]


@server.resource("notes://readme", mime_type="text/markdown")
def readme() -> str:
    """The readme."""
    return "# Readme\nThe fake server's notes."


@server.resource("notes://pixel", mime_type="image/png")
def pixel() -> bytes:
    """A one-pixel PNG."""
    return PIXEL_PNG


def _require_header(app: Any, name: str, value: str) -> Any:
    """An ASGI wrapper answering 401 to any request without header ``name: value``."""
    wanted = (name.lower().encode(), value.encode())

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and wanted not in scope.get("headers", []):
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"missing credentials"})
            return
        await app(scope, receive, send)

    return guarded


async def _serve_http(port: int, header: str | None) -> None:
    import uvicorn

    app: Any = server.streamable_http_app()
    if header:
        name, _, value = header.partition("=")
        app = _require_header(app, name, value)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    web = uvicorn.Server(config)
    serving = asyncio.create_task(web.serve())
    while not web.started:
        if serving.done():
            await serving
            return
        await asyncio.sleep(0.02)
    print(f"serving on {port}", flush=True)
    await serving


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=0, help="serve streamable HTTP on PORT")
    parser.add_argument("--header", default=None, help="require this NAME=VALUE header")
    opts = parser.parse_args()
    if opts.http:
        asyncio.run(_serve_http(opts.http, opts.header))
    else:
        server.run("stdio")


if __name__ == "__main__":
    sys.exit(main())
