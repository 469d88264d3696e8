"""What an MCP tool's result becomes for the model: its structured content (preferred
where the server gives it) or its text; images, audio and binary resources saved into the
run's ``outputs/`` (so they reach the thread with the run's other files), images also
shown to a vision-capable model (``ToolContext.images``); resource links named with the
tool that reads them."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import mimetypes
import re

from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from core.agent.context import ToolContext
from core.errors import WorkspaceError
from core.workspace.base import human_size

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
OUTPUTS = "outputs/"


def reader_name(server: str) -> str:
    """The registry name of a server's resource reader (``core.tools.mcp.resources``)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"{server}__read_resource")[:64]


async def result_text(ctx: ToolContext, server: str, tool: str, result: CallToolResult) -> str:
    """The result for the model: structured content as JSON if given (its text blocks
    usually repeat it), else the text blocks; other content saved and described."""
    structured = result.structured_content
    if result.content and isinstance(structured, dict) and list(structured) == ["result"]:
        structured = None  # a plain value wrapped (FastMCP): its content says it as simply
    parts: list[str] = []
    if structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, default=str))
    for block in result.content:
        if structured is not None and isinstance(block, TextContent):
            continue
        parts.append(await block_text(ctx, server, tool, block))
    return "\n".join(parts) if parts else "(the tool returned nothing)"


def error_text(result: CallToolResult) -> str:
    """The server's words for a failed call (text content only)."""
    text = "\n".join(b.text for b in result.content if isinstance(b, TextContent)).strip()
    return text or "no details given"


async def block_text(ctx: ToolContext, server: str, tool: str, block: ContentBlock) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent | AudioContent):
        kind = "image" if isinstance(block, ImageContent) else "audio"
        return await save(ctx, server, tool, kind, block.data, block.mime_type)
    if isinstance(block, EmbeddedResource):
        return await contents_text(ctx, server, tool, block.resource)
    if isinstance(block, ResourceLink):
        about = f": {block.description}" if block.description else ""
        return (
            f"[link to resource {block.name} at {block.uri}{about}; read it with "
            f"{reader_name(server)}]"
        )
    return f"[{getattr(block, 'type', 'unknown')} content, not shown]"


async def contents_text(
    ctx: ToolContext, server: str, tool: str, res: TextResourceContents | BlobResourceContents
) -> str:
    """A resource's contents: its text, or its bytes saved as a file."""
    if isinstance(res, BlobResourceContents):
        mime = res.mime_type or "application/octet-stream"
        kind = "image" if mime.startswith("image/") else "resource"
        saved = await save(ctx, server, tool, kind, res.blob, mime)
        return f"{saved} (resource {res.uri})"
    return f"[resource {res.uri}]\n{res.text}"


async def save(ctx: ToolContext, server: str, tool: str, kind: str, data: str, mime: str) -> str:
    """Save base64 ``data`` under the run's ``outputs/``, named by its content (a turn run
    again writes the same file); an image small enough is also staged for the model. A
    description of what happened either way."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f"[{kind} ({mime}) that could not be decoded]"
    ext = mimetypes.guess_extension(mime) or ".bin"
    digest = hashlib.sha256(raw).hexdigest()[:12]
    path = f"{OUTPUTS}{_UNSAFE.sub('_', server)}-{_UNSAFE.sub('_', tool)}-{digest}{ext}"
    try:
        await ctx.workspace.write(ctx.run_id, path, raw)
    except WorkspaceError as exc:
        return f"[{kind} ({mime}, {human_size(len(raw))}) not saved: {exc}]"
    if kind == "image" and len(raw) <= ctx.settings.mcp.image_max_bytes:
        ctx.images.append((path, f"data:{mime};base64,{data}"))
    return f"[{kind} saved as {path} ({mime}, {human_size(len(raw))})]"
