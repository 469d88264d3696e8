"""The sandbox's disk: a tmpfs of a fixed size and number of inodes, mounted by the host
for one call, so the kernel refuses a write past the cap (ENOSPC) instead of a watcher
noticing it afterwards. The code's working folder and its ``/tmp`` both live in it; the
host fills it with the run's files before and reads them back after, then unmounts it.

Mounting needs root (CAP_SYS_ADMIN), which is also when the sandbox drops to a user of
its own. Run by anyone else, the cap is per file (RLIMIT_FSIZE) plus the runner's
watcher on the total. A worker killed mid-call leaves its mount behind: :func:`sweep`
unmounts those of processes that are gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

PREFIX = "caramba-sandbox-"
_MS_NOSUID, _MS_NODEV = 2, 4
_MNT_DETACH = 2
_libc = ctypes.CDLL(None, use_errno=True)

Full = Literal["bytes", "files"]


@dataclass(frozen=True)
class Box:
    """One call's folder: ``root`` on the host disk (the code file), ``disk`` the tmpfs
    in it (when mounted), ``work`` and ``tmp`` the code's folders."""

    root: Path
    mounted: bool

    @property
    def disk(self) -> Path:
        return self.root / "disk"

    @property
    def work(self) -> Path:
        return self.disk / "work"

    @property
    def tmp(self) -> Path:
        return self.disk / "tmp"

    @property
    def code(self) -> Path:
        return self.root / "code"


def make_box(*, max_bytes: int, max_inodes: int, owner: int | None, mount: bool) -> Box:
    """A fresh folder (its name carries this process's id, for :func:`sweep`); with
    ``mount``, a tmpfs of ``max_bytes`` and ``max_inodes`` (files and folders) in it."""
    box = Box(Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-")), mount)
    box.disk.mkdir()
    if mount:
        # Its own root folder counts as an inode, and so do work/, tmp/ and tmp/.shm/.
        opts = f"size={max_bytes},nr_inodes={max_inodes + 4},mode=0755"
        try:
            _mount(box.disk, opts)
        except OSError:
            shutil.rmtree(box.root, ignore_errors=True)
            raise
    for folder in (box.work, box.tmp, box.tmp / ".shm", box.code):
        folder.mkdir()
    box.code.chmod(0o755)  # read by the sandbox's own user
    box.tmp.chmod(0o1777)
    (box.tmp / ".shm").chmod(0o1777)
    if owner is not None:
        os.chown(box.work, owner, owner)
    return box


def full(box: Box) -> Full | None:
    """Which cap the code ran into, as the kernel counts it (``None``: neither)."""
    if not box.mounted:
        return None
    st = os.statvfs(box.disk)
    if st.f_ffree == 0:
        return "files"
    # A few blocks of slack: a write that failed may leave a partial block free.
    if st.f_bavail * st.f_frsize < 64 * 1024:
        return "bytes"
    return None


def unmount(box: Box) -> None:
    if box.mounted:
        _umount(box.disk)


def can_mount() -> str | None:
    """``None`` if this process can mount a tmpfs, else why not."""
    if os.geteuid() != 0:
        return "not root: the cap is per file plus a watcher on the total"
    try:
        box = make_box(max_bytes=1 << 20, max_inodes=8, owner=None, mount=True)
    except OSError as exc:
        return f"a tmpfs cannot be mounted here ({exc.strerror or exc})"
    unmount(box)
    shutil.rmtree(box.root, ignore_errors=True)
    return None


def sweep() -> int:
    """Unmount and remove the boxes of processes that died mid-call; how many."""
    folder = tempfile.gettempdir().rstrip("/") + "/" + PREFIX
    swept = 0
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            points = [line.split()[4] for line in f]
    except OSError:
        return 0
    for point in points:
        if not (point.startswith(folder) and point.endswith("/disk")):
            continue
        pid = point[len(folder) :].split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        with contextlib.suppress(OSError):
            _umount(Path(point))
            shutil.rmtree(os.path.dirname(point), ignore_errors=True)
            swept += 1
    return swept


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _mount(target: Path, opts: str) -> None:
    flags = _MS_NOSUID | _MS_NODEV
    if _libc.mount(b"caramba-sandbox", os.fsencode(target), b"tmpfs", flags, opts.encode()):
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(target))


def _umount(target: Path) -> None:
    if _libc.umount2(os.fsencode(target), _MNT_DETACH):
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(target))
