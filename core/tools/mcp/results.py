"""What an MCP tool's result becomes for the model: its text, and its images, audio and
binary resources saved into the run's workspace (or described, if they cannot be)."""

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
)

from core.agent.context import ToolContext
from core.errors import WorkspaceError
from core.workspace.base import human_size

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


async def result_text(ctx: ToolContext, server: str, tool: str, result: CallToolResult) -> str:
    """The result's content as text: text joined, binary content saved and described."""
    parts: list[str] = []
    for block in result.content:
        parts.append(await _block_text(ctx, server, tool, block))
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    return "\n".join(parts) if parts else "(the tool returned nothing)"


def error_text(result: CallToolResult) -> str:
    """The server's words for a failed call (text content only)."""
    text = "\n".join(b.text for b in result.content if isinstance(b, TextContent)).strip()
    return text or "no details given"


async def _block_text(ctx: ToolContext, server: str, tool: str, block: ContentBlock) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent | AudioContent):
        kind = "image" if isinstance(block, ImageContent) else "audio"
        return await _save(ctx, server, tool, kind, block.data, block.mime_type)
    if isinstance(block, EmbeddedResource):
        res = block.resource
        if isinstance(res, BlobResourceContents):
            mime = res.mime_type or "application/octet-stream"
            saved = await _save(ctx, server, tool, "resource", res.blob, mime)
            return f"{saved} (resource {res.uri})"
        return f"[resource {res.uri}]\n{res.text}"
    if isinstance(block, ResourceLink):
        about = f": {block.description}" if block.description else ""
        return f"[link to resource {block.name} at {block.uri}{about}]"
    return f"[{getattr(block, 'type', 'unknown')} content, not shown]"


async def _save(ctx: ToolContext, server: str, tool: str, kind: str, data: str, mime: str) -> str:
    """Save base64 ``data`` as a workspace file named by its content (a turn run again
    writes the same file); a description of what happened either way."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f"[{kind} ({mime}) that could not be decoded]"
    ext = mimetypes.guess_extension(mime) or ".bin"
    digest = hashlib.sha256(raw).hexdigest()[:12]
    path = f"mcp/{_UNSAFE.sub('_', server)}/{_UNSAFE.sub('_', tool)}-{digest}{ext}"
    try:
        await ctx.workspace.write(ctx.run_id, path, raw)
    except WorkspaceError as exc:
        return f"[{kind} ({mime}, {human_size(len(raw))}) not saved: {exc}]"
    return f"[{kind} saved as {path} ({mime}, {human_size(len(raw))})]"
