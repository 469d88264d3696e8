"""The run workspace's tools: list, read (paged text; binary described) and write files.

Every agent of a run sees the same files (``ctx.workspace``). Writing a file is not an
intent: it is idempotent (a redelivered turn writes the same bytes again), and agents of
the same run read each other's files at once. ``download`` lives with the web tools
(it goes through their fetch rules).
"""

from __future__ import annotations

from core.agent.context import ToolContext
from core.errors import ToolRetry, WorkspaceError
from core.tools.registry import Tool, tool
from core.workspace.base import FileInfo, human_size

_LIST_MAX = 200


@tool(category="files")
async def list_files(ctx: ToolContext, folder: str = "") -> str:
    """List the files in the run's workspace (shared by every agent of the run).

    Args:
        folder: Only files under this folder, e.g. "outputs" ("" = all files).
    """
    prefix = folder.strip().strip("/")
    files = [
        f
        for f in await ctx.workspace.files(ctx.run_id)
        if not prefix or f.path == prefix or f.path.startswith(prefix + "/")
    ]
    if not files:
        where = f" under {prefix}/" if prefix else ""
        return f"No files{where} in the workspace yet."
    lines = [f.describe() for f in files[:_LIST_MAX]]
    if len(files) > _LIST_MAX:
        lines.append(f"… and {len(files) - _LIST_MAX} more")
    total = human_size(sum(f.size for f in files))
    return f"{len(files)} file(s), {total}:\n" + "\n".join(lines)


@tool(category="files")
async def read_file(ctx: ToolContext, path: str, page: int = 1) -> str:
    """Read a text file from the run's workspace, one page at a time. A binary file
    (image, spreadsheet, archive) is described instead: process it with run_code.

    Args:
        path: The file's path in the workspace, e.g. "data/sales.csv".
        page: Which page of the text to read (1 = the start).
    """
    if page < 1:
        raise ToolRetry("page starts at 1")
    try:
        info = await ctx.workspace.info(ctx.run_id, path)
        if info is None or not info.is_text:
            data = await ctx.workspace.read(ctx.run_id, path)  # raises for a missing file
            assert info is not None
            return _describe_binary(info, data)
        data = await ctx.workspace.read(ctx.run_id, path)
    except WorkspaceError as exc:
        raise ToolRetry(str(exc)) from None
    text = data.decode("utf-8", errors="replace")
    size = ctx.settings.workspace.read_chars
    pages = max(1, -(-len(text) // size))
    if page > pages:
        raise ToolRetry(f"{info.path} has {pages} page(s) of {size} characters; ask for 1–{pages}")
    chunk = text[(page - 1) * size : page * size]
    head = f"{info.describe()} — page {page} of {pages}"
    more = f"\n[… {pages - page} more page(s): read_file(page={page + 1})]" if page < pages else ""
    return f"{head}\n{chunk}{more}"


@tool(read_only=False, category="files")
async def write_file(ctx: ToolContext, path: str, content: str) -> str:
    """Create or replace a text file in the run's workspace (other agents of the run see
    it at once). Put files meant for the people who asked in "outputs/": they are sent
    to the chat when the run ends.

    Args:
        path: A relative path such as "notes.md" or "outputs/report.md".
        content: The whole text of the file (UTF-8).
    """
    try:
        info = await ctx.workspace.write(ctx.run_id, path, content.encode("utf-8"))
    except WorkspaceError as exc:
        raise ToolRetry(str(exc)) from None
    return f"Wrote {info.describe()}."


def _describe_binary(info: FileInfo, data: bytes) -> str:
    detail = ""
    if info.mime.startswith("image/"):
        size = _image_size(data)
        detail = f", {size[0]}×{size[1]} pixels" if size else ""
    return (
        f"{info.describe()}{detail}: a binary file, not shown as text. Use run_code to "
        "open it (it is in the working directory), or hand it on by its path."
    )


def _image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height of a PNG, GIF or JPEG, from its header (no image library)."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                return None
            marker, length = data[i + 1], int.from_bytes(data[i + 2 : i + 4], "big")
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                h = int.from_bytes(data[i + 5 : i + 7], "big")
                w = int.from_bytes(data[i + 7 : i + 9], "big")
                return w, h
            i += 2 + length
    return None


FILE_TOOLS: tuple[Tool, ...] = (list_files, read_file, write_file)
