"""The sandbox's walls the kernel keeps, under the real bubblewrap: a disk of fixed size and
file count (a tmpfs per call), no user namespaces, a seccomp filter, and at most
``sandbox.max_concurrent`` sandboxes at once. Each test looks from the host as well as
at the tool's result."""

from __future__ import annotations

import asyncio
import os
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from core.process.doctor_sandbox import check_sandbox
from core.process.doctor_types import Level
from core.tools.sandbox import disk
from tests.conftest import make_settings
from tests.integration.test_sandbox import LIMITS, Analyst, _services

pytestmark = pytest.mark.integration

MB = 2**20


def _boxes() -> list[str]:
    """This process's sandbox folders on the host."""
    prefix = f"{disk.PREFIX}{os.getpid()}-"
    return [str(p) for p in Path(tempfile.gettempdir()).glob(prefix + "*")]


def _held_bytes() -> int:
    """Bytes this process's sandboxes hold on the host right now (their tmpfs included)."""
    total = 0
    for box in _boxes():
        for folder, _, names in os.walk(box):
            for name in names:
                try:
                    total += os.lstat(os.path.join(folder, name)).st_blocks * 512
                except OSError:
                    continue
    return total


class Peak:
    """The most :func:`_held_bytes` showed while the block ran (looked at every 5 ms)."""

    def __init__(self) -> None:
        self.most = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(0.005):
            self.most = max(self.most, _held_bytes())

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


async def test_writing_five_times_the_disk_cap_keeps_at_most_the_cap(
    make_services: Any,
) -> None:
    svc = _services(make_services, {**LIMITS, "disk_mb": 8, "file_mb": 50})
    me = Analyst(svc)
    await svc.workspace.write(me.run_id, "input.csv", b"a,b\n" * 1000)
    # 40 MB in 1 MB writes, into the working folder and /tmp, then held a while so the
    # host sees the peak.
    code = (
        "import time\n"
        "n = 0\n"
        "try:\n"
        "    for i in range(40):\n"
        "        with open(('/tmp/' if i % 2 else '') + f'big{i % 4}.bin', 'ab') as f:\n"
        "            f.write(b'x' * 2**20)\n"
        "        n += 1\n"
        "except OSError as e:\n"
        "    print('refused after', n, 'MB:', e.strerror)\n"
        "time.sleep(0.5)\n"
    )
    with Peak() as peak:
        ok, text, _ = await me.run(code)
    assert ok and "refused after" in text and "No space left on device" in text, text
    refused_after = int(text.split("refused after ", 1)[1].split(" ", 1)[0])
    assert refused_after <= 8
    # Never more than the cap (and a little slack for folders) on the host, during or after.
    assert 6 * MB <= peak.most <= 8 * MB + 256 * 1024, peak.most
    assert "at most 8 MB together (sandbox.disk_mb)" in text
    assert _boxes() == [] and _held_bytes() == 0
    files = await me.files()
    assert sum(len(b) for b in files.values()) <= 8 * MB


async def test_too_many_files_are_refused_inside(make_services: Any) -> None:
    svc = _services(make_services, {**LIMITS, "max_files": 50})
    me = Analyst(svc)
    code = (
        "n = 0\n"
        "try:\n"
        "    for i in range(500):\n"
        "        open(f'f{i:03}.txt', 'w').close(); n += 1\n"
        "except OSError as e:\n"
        "    print('made', n, e.strerror)\n"
    )
    ok, text, _ = await me.run(code)
    assert ok and "No space left on device" in text, text
    assert int(text.split("made ", 1)[1].split(" ", 1)[0]) <= 50
    assert "at most 50 files and folders together (sandbox.max_files)" in text
    assert len(await me.files()) <= 50


async def test_no_user_namespaces_inside(make_services: Any) -> None:
    svc = _services(make_services, LIMITS)
    ok, text, _ = await Analyst(svc).run("unshare -Ur true; echo rc=$?; id -u", "bash")
    assert ok and "rc=1" in text and "Operation not permitted" in text, text
    assert "\n0\n" not in text  # still not root


async def test_the_seccomp_filter_refuses_with_eperm(make_services: Any) -> None:
    svc = _services(make_services, {**LIMITS, "cpu_s": 10, "timeout_s": 20.0})
    # Each of these works for an unprivileged process without a filter (ptrace on
    # itself, a user namespace) or would say EPERM for want of a capability anyway; the
    # filter refuses them all before the kernel looks further. numpy still imports.
    code = (
        "import ctypes, errno, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "calls = {\n"
        "    'ptrace': lambda: libc.ptrace(0, 0, 0, 0),\n"  # PTRACE_TRACEME
        "    'unshare': lambda: libc.unshare(0x10000000),\n"  # CLONE_NEWUSER
        "    'mount': lambda: libc.mount(b'none', b'/tmp', b'tmpfs', 0, None),\n"
        "    'setns': lambda: libc.setns(os.open('/proc/self/ns/uts', os.O_RDONLY), 0),\n"
        "}\n"
        "for name, call in calls.items():\n"
        "    result = call()\n"
        "    print(name, result, errno.errorcode.get(ctypes.get_errno()))\n"
        "import numpy; print('numpy', numpy.arange(4).sum())\n"
    )
    ok, text, _ = await Analyst(svc).run(code)
    for name in ("ptrace", "unshare", "mount", "setns"):
        assert f"{name} -1 EPERM" in text, text
    assert ok and "numpy 6" in text


async def test_at_most_max_concurrent_sandboxes_at_once(make_services: Any) -> None:
    svc = _services(make_services, {**LIMITS, "max_concurrent": 2})
    # Each sandbox says when it started and ended (the monotonic clock is the host's).
    code = "import time\ns = time.monotonic()\ntime.sleep(1.1)\nprint('span', s, time.monotonic())"
    results = await asyncio.gather(*(Analyst(svc).run(code) for _ in range(3)))
    spans = []
    for ok, text, _ in results:
        assert ok, text
        start, end = text.split("span ", 1)[1].split()[:2]
        spans.append((float(start), float(end)))
    at_once = max(sum(s <= t < e for s, e in spans) for t, _ in spans)
    assert at_once == 2, spans
    waited = [text for _, text, _ in results if "for a free sandbox first" in text]
    assert len(waited) == 1 and "(at most 2 run at once: sandbox.max_concurrent)" in waited[0]


def test_the_tmpfs_of_a_dead_worker_is_swept() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    root = Path(tempfile.mkdtemp(prefix=f"{disk.PREFIX}{dead.pid}-"))
    (root / "disk").mkdir()
    disk._mount(root / "disk", "size=1048576,nr_inodes=16")
    (root / "disk" / "left.bin").write_bytes(b"x" * 1000)
    assert disk.sweep() >= 1
    assert not root.exists()


def test_doctor_names_the_walls() -> None:
    check = check_sandbox(make_settings())
    assert check.level is Level.OK, check
    assert "disk capped by the kernel at 100 MB and 1000 files" in check.detail
    assert "user namespaces off, seccomp filter on" in check.detail
