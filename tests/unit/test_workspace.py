"""The run workspace: both stores behave the same (paths, caps, listing), and the file
tools page text, describe binaries and tell agents which files exist."""

from __future__ import annotations

import struct
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest

from core.agent.workspace_note import workspace_note
from core.errors import ToolRetry, WorkspaceError
from core.state.keys import Keys
from core.tools.files import list_files, read_file, write_file
from core.workspace import Workspace, WorkspaceCaps
from core.workspace.base import clean_path
from core.workspace.local_store import LocalWorkspace
from core.workspace.redis_store import RedisWorkspace
from tests.conftest import make_settings

CAPS = WorkspaceCaps(max_file_bytes=1000, max_run_bytes=2500, max_files=4)


@pytest.fixture(params=["redis", "local"])
async def ws(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Workspace]:
    if request.param == "redis":
        client = fakeredis.FakeAsyncRedis(decode_responses=True)
        yield RedisWorkspace(client, Keys("t"), CAPS, ttl_s=60)
        await client.aclose()
    else:
        yield LocalWorkspace(tmp_path, CAPS)


async def test_write_read_list_and_replace(ws: Workspace) -> None:
    await ws.write("run_a", "data/sales.csv", b"a,b\n1,2\n")
    await ws.write("run_a", "./notes.md", b"# hi")
    await ws.write("run_b", "other.txt", b"not run a's")
    files = await ws.files("run_a")
    assert [f.path for f in files] == ["data/sales.csv", "notes.md"]
    assert files[0].size == 8 and files[0].mime == "text/csv"
    assert await ws.read("run_a", "data//sales.csv") == b"a,b\n1,2\n"
    await ws.write("run_a", "notes.md", b"# replaced")
    assert await ws.read("run_a", "notes.md") == b"# replaced"
    assert len(await ws.files("run_a")) == 2
    assert await ws.delete("run_a", "notes.md") is True
    await ws.clear("run_a")
    assert await ws.files("run_a") == []
    assert [f.path for f in await ws.files("run_b")] == ["other.txt"]


async def test_caps_refuse_with_what_to_do(ws: Workspace) -> None:
    with pytest.raises(WorkspaceError, match="one file may hold at most"):
        await ws.write("r", "big.bin", b"x" * 1001)
    for i in range(2):
        await ws.write("r", f"f{i}.bin", b"x" * 1000)
    with pytest.raises(WorkspaceError, match="Delete files you no longer need"):
        await ws.write("r", "f2.bin", b"x" * 600)
    await ws.write("r", "f0.bin", b"x" * 10)  # replacing counts the old size out
    await ws.write("r", "f2.bin", b"x")
    await ws.write("r", "f3.bin", b"x")
    with pytest.raises(WorkspaceError, match="already holds 4 files"):
        await ws.write("r", "f4.bin", b"x")


async def test_missing_file_names_what_is_there(ws: Workspace) -> None:
    with pytest.raises(WorkspaceError, match="workspace is empty"):
        await ws.read("r", "nope.txt")
    await ws.write("r", "yes.txt", b"1")
    with pytest.raises(WorkspaceError, match=r"holds: yes\.txt"):
        await ws.read("r", "nope.txt")


@pytest.mark.parametrize(
    "path", ["/etc/passwd", "../x", "a/../../x", "~/x", "", "a/\x00b", "x" * 201]
)
def test_paths_outside_the_workspace_are_refused(path: str) -> None:
    with pytest.raises(WorkspaceError):
        clean_path(path)


# --- the tools ----------------------------------------------------------------------------


class _Ctx:
    """What the file tools use of a ToolContext."""

    def __init__(self, workspace: Workspace, read_chars: int = 200) -> None:
        self.workspace = workspace
        self.run_id = "run_t"
        self.settings = make_settings(workspace={"read_chars": read_chars})


def _png(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    return (
        b"\x89PNG\r\n\x1a\n"
        + struct.pack(">I", len(ihdr))
        + chunk
        + struct.pack(">I", zlib.crc32(chunk))
    )


async def _call(t: Any, ctx: Any, **kwargs: Any) -> str:
    result: str = await t.fn(ctx, **kwargs)
    return result


async def test_file_tools_page_text_and_describe_binaries(ws: Workspace) -> None:
    ctx = _Ctx(ws)
    assert "No files" in await _call(list_files, ctx)
    text = "".join(f"line {i}\n" for i in range(60))  # 470 characters: 3 pages of 200
    assert "Wrote notes.txt" in await _call(write_file, ctx, path="notes.txt", content=text)
    first = await _call(read_file, ctx, path="notes.txt")
    assert "page 1 of 3" in first and "line 0" in first and "read_file(page=2)" in first
    last = await _call(read_file, ctx, path="notes.txt", page=3)
    assert "line 59" in last and "more page" not in last
    with pytest.raises(ToolRetry, match="ask for 1–3"):
        await _call(read_file, ctx, path="notes.txt", page=4)
    await ws.write(ctx.run_id, "outputs/chart.png", _png(640, 480))
    described = await _call(read_file, ctx, path="outputs/chart.png")
    assert "640×480 pixels" in described and "run_code" in described
    with pytest.raises(ToolRetry, match=r"holds: notes\.txt"):
        await _call(read_file, ctx, path="missing.csv")
    with pytest.raises(ToolRetry, match="leaves the workspace"):
        await _call(write_file, ctx, path="../escape.txt", content="x")
    listing = await _call(list_files, ctx, folder="outputs")
    assert "outputs/chart.png" in listing and "notes.txt" not in listing


async def test_agents_with_file_tools_are_told_which_files_exist(
    make_services: Any, settings: Any
) -> None:
    from core.llm.scripted import ScriptedModel

    svc = make_services(settings, ScriptedModel([]), start=False)
    assert await workspace_note(svc, "run_n", ["calculate", "finish"]) is None
    note = await workspace_note(svc, "run_n", ["read_file", "finish"])
    assert note is not None and "no files yet" in (note.content or "")
    await svc.workspace.write("run_n", "data.csv", b"a,b\n")
    note = await workspace_note(svc, "run_n", ["read_file"])
    assert note is not None and "data.csv (4 B, text/csv)" in (note.content or "")
