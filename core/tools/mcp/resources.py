"""``<server>__read_resource``: one tool per MCP server that offers resources, reading one
by its URI (the ones it lists are named in the tool's description; a resource link in a
tool's result names its URI too). Text comes back as text; bytes are saved as a file of
the run (``outputs/``), an image also shown to a vision-capable model."""

from __future__ import annotations

import logging
from typing import Any

from core.agent.context import ToolContext
from core.errors import ToolRetry
from core.tools.mcp.connect import McpServerError
from core.tools.mcp.connection import McpConnection
from core.tools.mcp.listing import has_resources, list_resources, list_templates, read_resource
from core.tools.mcp.results import contents_text, reader_name
from core.tools.registry import RawArguments, Tool

log = logging.getLogger(__name__)

_NAMED = 15  # resources named in the tool's description, at most
_SCHEMA = {
    "type": "object",
    "properties": {"uri": {"type": "string", "description": "The resource's URI."}},
    "required": ["uri"],
}


async def read_resource_tool(conn: McpConnection) -> Tool | None:
    """The server's resource reader, or None if it offers no resources."""
    server = conn.name
    if not has_resources(await conn.client()):
        return None
    try:
        listed = await list_resources(conn)
        templates = await list_templates(conn)
    except McpServerError as exc:
        log.warning("%s", exc)
        return None
    if not listed and not templates:
        return None
    named = [
        f"{r.uri} ({r.name}{': ' + r.description if r.description else ''})"[:200]
        for r in listed[:_NAMED]
    ] + [f"{t.uri_template} ({t.name})"[:200] for t in templates[:_NAMED]]
    more = len(listed) + len(templates) - len(named)
    about = f" It lists: {'; '.join(named)}" + (f" and {more} more." if more else ".")

    async def read(ctx: ToolContext, arguments: dict[str, Any]) -> str:
        uri = str(arguments.get("uri", "")).strip()
        if not uri:
            raise ToolRetry("Give the resource's uri.")
        try:
            result = await read_resource(conn, uri)
        except McpServerError as exc:
            raise ToolRetry(str(exc)) from exc
        parts = [await contents_text(ctx, server, "resource", c) for c in result.contents]
        return "\n".join(parts) if parts else f"(resource {uri} is empty)"

    return Tool(
        name=reader_name(server),
        description=(
            f"Read a resource of MCP server {server} by its URI (text, or a file saved for "
            f"the run).{about}"
        ),
        fn=read,
        args_model=RawArguments,
        read_only=True,
        takes_context=True,
        category="mcp",
        network=conn.server.transport == "http",
        server=server,
        parameters=_SCHEMA,
    )
