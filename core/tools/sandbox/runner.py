"""Run one sandbox command: output read within bounds, a wall-clock limit, and the whole
process group killed at any limit (or if the call is cancelled). Inside, bwrap's pid
namespace dies with it: nothing the code started lives on.

The disk is capped by the kernel (a tmpfs, :mod:`disk`); only where that cannot be
mounted (not root) does a watcher poll the working folder's size instead, which stops the
code after it has overshot, not before.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from core.tools.sandbox.disk import Full
from core.tools.sandbox.output import Captured, pump

Stop = Literal["timeout", "flood", "disk"]
# How often the working directory's size is checked while the code runs (no tmpfs).
WATCH_EVERY_S = 0.25


@dataclass(frozen=True)
class DiskCap:
    """What the code may leave in its working directory before it is stopped (polled)."""

    root: Path
    max_bytes: int
    max_files: int


@dataclass
class Outcome:
    returncode: int | None
    stdout: Captured
    stderr: Captured
    seconds: float
    stopped: Stop | None = None
    # The tmpfs cap the code ran into (the kernel refused its writes past it).
    full: Full | None = None
    # Seconds the call waited for a free sandbox (sandbox.max_concurrent).
    waited: float = 0.0


async def execute(
    cmd: list[str],
    *,
    timeout_s: float,
    output_bytes: int,
    flood_bytes: int,
    disk: DiskCap | None = None,
    pass_fds: tuple[int, ...] = (),
) -> Outcome:
    """Run ``cmd`` (a bwrap command line) to its end or to a limit."""
    out, err = Captured(output_bytes), Captured(output_bytes)
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *cmd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # its own process group, killed as one
        pass_fds=pass_fds,
    )
    stopped: list[Stop] = []

    def stop(reason: Stop) -> None:
        if not stopped:
            stopped.append(reason)
        _kill(proc.pid)

    def check_flood() -> None:
        if out.total + err.total > flood_bytes and not stopped:
            stop("flood")

    pumps = [
        asyncio.create_task(pump(proc.stdout, out, check_flood)),
        asyncio.create_task(pump(proc.stderr, err, check_flood)),
    ]
    watcher = asyncio.create_task(_watch(disk, lambda: stop("disk"))) if disk else None
    try:
        try:
            await asyncio.wait_for(proc.wait(), timeout_s)
        except TimeoutError:
            stop("timeout")
            await proc.wait()
        # The pipes close when the last process holding them is gone (bwrap's namespace
        # takes every one with it); a few seconds' grace, then give up on them.
        _, pending = await asyncio.wait(pumps, timeout=5)
        for task in pending:
            task.cancel()
    finally:
        if proc.returncode is None:  # cancelled: the call was abandoned
            _kill(proc.pid)
        if watcher is not None:
            watcher.cancel()
        for task in pumps:
            task.cancel()
    seconds = time.monotonic() - started
    return Outcome(proc.returncode, out, err, seconds, stopped[0] if stopped else None)


def _kill(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def _watch(disk: DiskCap, stop: Callable[[], None]) -> None:
    while True:
        await asyncio.sleep(WATCH_EVERY_S)
        size, count = await asyncio.to_thread(_usage, disk.root, disk.max_files + 1)
        if size > disk.max_bytes or count > disk.max_files:
            stop()
            return


def _usage(root: Path, max_entries: int) -> tuple[int, int]:
    """Bytes and entries under ``root`` (counting stops past ``max_entries``)."""
    size = count = 0
    stack = [str(root)]
    while stack and count <= max_entries:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            count += 1
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            size += st.st_size
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
    return size, count
