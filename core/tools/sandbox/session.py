"""One ``run_code`` call end to end: a free sandbox waited for (``sandbox.max_concurrent``),
the run's files into a private disk of capped size (a tmpfs, :mod:`disk`), the code run
in the sandbox against them, the changes back into the workspace, the disk removed."""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
from typing import Literal

from core.config_tools import SandboxSettings
from core.tools.sandbox import disk, seccomp
from core.tools.sandbox.gate import slot
from core.tools.sandbox.layout import CODE_DIR, bwrap_command, sandbox_uid
from core.tools.sandbox.probe import Probe
from core.tools.sandbox.report import flood_bytes, render
from core.tools.sandbox.runner import DiskCap, execute
from core.tools.sandbox.sync import materialise, remove_tree, sync_back
from core.workspace.base import Workspace

Language = Literal["python", "bash"]
_SCRIPT = {"python": "main.py", "bash": "main.sh"}
_MB = 1024 * 1024


async def run_code_in_sandbox(
    settings: SandboxSettings,
    ready: Probe,
    workspace: Workspace,
    run_id: str,
    code: str,
    language: Language = "python",
) -> str:
    """Run ``code`` against the run's files; the model's report of what happened."""
    if not ready.ok or ready.tools is None or ready.interpreter is None:
        raise RuntimeError(f"the sandbox is unavailable: {ready.detail}")
    async with slot(settings.max_concurrent) as waited:
        return await _call(settings, ready, workspace, run_id, code, language, waited)


async def _call(
    settings: SandboxSettings,
    ready: Probe,
    workspace: Workspace,
    run_id: str,
    code: str,
    language: Language,
    waited: float,
) -> str:
    assert ready.tools is not None and ready.interpreter is not None
    uid = sandbox_uid() if os.geteuid() == 0 else None
    box = await asyncio.to_thread(
        disk.make_box,
        max_bytes=settings.disk_mb * _MB,
        max_inodes=settings.max_files,
        owner=uid,
        mount=ready.tmpfs,
    )
    try:
        script = box.code / _SCRIPT[language]
        script.write_text(code, encoding="utf-8")
        script.chmod(0o644)
        try:
            before = await materialise(workspace, run_id, box.work, uid)
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EFBIG):
                raise
            return _too_big_to_start(settings, disk.full(box))
        if language == "python":
            argv = ready.interpreter.argv(f"{CODE_DIR}/{script.name}")
        else:
            argv = ["bash", "--noprofile", "--norc", f"{CODE_DIR}/{script.name}"]
        fd = seccomp.pipe_fd()
        try:
            cmd = bwrap_command(
                ready.tools,
                settings,
                ready.interpreter,
                host_workdir=str(box.work),
                host_code_dir=str(box.code),
                argv=argv,
                uid=uid,
                host_tmp=str(box.tmp) if box.mounted else None,
                seccomp_fd=fd,
            )
            # Without a tmpfs: a watcher on the working folder (room for scratch files
            # beyond what the workspace keeps, but not a full disk).
            watch = DiskCap(box.work, settings.disk_mb * _MB, settings.max_files)
            outcome = await execute(
                cmd,
                timeout_s=settings.timeout_s,
                output_bytes=settings.output_chars,
                flood_bytes=flood_bytes(settings),
                disk=None if box.mounted else watch,
                pass_fds=(fd,),
            )
        finally:
            os.close(fd)
        outcome.full = disk.full(box)
        outcome.waited = waited
        synced = await sync_back(workspace, run_id, box.work, before)
        return render(outcome, synced, settings)
    finally:
        await asyncio.to_thread(_remove, box)


def _too_big_to_start(settings: SandboxSettings, full: disk.Full | None) -> str:
    what = (
        f"more than {settings.max_files} files and folders (sandbox.max_files)"
        if full == "files"
        else f"more than {settings.disk_mb} MB (sandbox.disk_mb)"
    )
    return (
        f"Not run: the run's files are {what}, more than the sandbox's disk holds. Delete "
        "files the code does not need, or raise the setting."
    )


def _remove(box: disk.Box) -> None:
    try:
        disk.unmount(box)
    finally:
        if box.mounted:
            shutil.rmtree(box.root, ignore_errors=True)
        else:
            remove_tree(box.root)
