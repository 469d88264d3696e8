"""What one run_code call costs: 100 runs of `print(1+1)` through the tool's own path
(the run's files materialised, bubblewrap, the limits, the files synced back, the folder
removed) against a small local workspace, and, for scale, the same interpreter started
bare (no sandbox). Then the walls: 5 GB written against the disk cap (the most that was
ever held on the host while it ran) and 12 calls at once with max_concurrent = 4.

Needs bubblewrap (`apt-get install bubblewrap`); no services. Run:
    .venv/bin/python bench/sandbox.py
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from core.config_tools import SandboxSettings
from core.tools.sandbox import Probe, probe, run_code_in_sandbox
from core.tools.sandbox.disk import PREFIX
from core.workspace.base import WorkspaceCaps
from core.workspace.local_store import LocalWorkspace

RUNS = 100


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def timed(fn: object, runs: int) -> list[float]:
    assert callable(fn)
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


async def main() -> None:
    settings = SandboxSettings()
    ready = probe(settings)
    if not ready.ok:
        sys.exit(f"bench sandbox: unavailable: {ready.detail}")
    assert ready.interpreter is not None
    python = ready.interpreter.executable
    bare = timed(
        lambda: subprocess.run([python, "-c", "print(1+1)"], check=True, stdout=subprocess.DEVNULL),
        20,
    )
    print(f"python start-up, no sandbox: p50_ms={pct(bare, 0.5):.1f}")
    bare_s = timed(lambda: subprocess.run([python, "-S", "-c", "1"], check=True), 20)
    print(f"python -S start-up (no site), no sandbox: p50_ms={pct(bare_s, 0.5):.1f}")

    with tempfile.TemporaryDirectory(prefix="caramba-bench-") as root:
        ws = LocalWorkspace(Path(root), WorkspaceCaps(10 * 2**20, 50 * 2**20, 200))
        await ws.write("run_bench", "data.csv", b"a,b\n1,2\n")
        samples = []
        for _ in range(RUNS):
            t = time.perf_counter()
            text = await run_code_in_sandbox(settings, ready, ws, "run_bench", "print(1+1)")
            samples.append(time.perf_counter() - t)
            assert "stdout:\n2" in text, text
    print(
        f"bench sandbox: runs={RUNS} p50_ms={pct(samples, 0.5):.1f} p99_ms={pct(samples, 0.99):.1f}"
        f" (mean {statistics.fmean(samples) * 1000:.1f})"
    )
    await disk_flood(settings, ready)
    if ready.tmpfs:  # for comparison: the watcher that polls (used where no tmpfs can be)
        await disk_flood(settings, dataclasses.replace(ready, tmpfs=False))
    await crowd(ready)


async def disk_flood(settings: SandboxSettings, ready: Probe) -> None:
    """5 GB written against the disk cap: how much ever lands on the host."""
    code = (
        "n = 0\n"
        "try:\n"
        "    with open('big.bin', 'wb') as f:\n"
        "        while n < 5 * 2**30:\n"
        "            f.write(b'x' * 2**20); n += 2**20\n"
        "except OSError as e:\n"
        "    print(f'{n // 2**20} MB: {e.strerror}')\n"
    )
    big = settings.model_copy(update={"file_mb": 10_000})
    peak, stop = [0], threading.Event()

    def watch() -> None:
        while not stop.wait(0.005):
            peak[0] = max(peak[0], _held())

    with tempfile.TemporaryDirectory(prefix="caramba-bench-") as root:
        ws = LocalWorkspace(Path(root), WorkspaceCaps(10 * 2**20, 50 * 2**20, 200))
        watcher = threading.Thread(target=watch)
        watcher.start()
        t = time.perf_counter()
        text = await run_code_in_sandbox(big, ready, ws, "run_flood", code)
        took = time.perf_counter() - t
        stop.set()
        watcher.join()
    said = text.split("stdout:\n", 1)[1].splitlines()[0] if ready.tmpfs else text.split(":")[0]
    print(
        f"bench sandbox disk: 5 GB against disk_mb={settings.disk_mb} (tmpfs={ready.tmpfs}): "
        f"{said}; peak held on the host {peak[0] / 2**20:.1f} MB; {took:.2f} s"
    )


async def crowd(ready: Probe) -> None:
    """3 × max_concurrent calls of 0.2 s at once: the longest wait for a free sandbox."""
    settings = SandboxSettings(max_concurrent=4)
    code = "import time; time.sleep(0.2)"
    with tempfile.TemporaryDirectory(prefix="caramba-bench-") as root:
        ws = LocalWorkspace(Path(root), WorkspaceCaps(10 * 2**20, 50 * 2**20, 200))
        t = time.perf_counter()
        calls = [run_code_in_sandbox(settings, ready, ws, f"run_{i}", code) for i in range(12)]
        await asyncio.gather(*calls)
        took = time.perf_counter() - t
    print(f"bench sandbox crowd: 12 calls of 0.2 s, max_concurrent=4: all done in {took:.2f} s")


def _held() -> int:
    """Bytes in this process's sandbox folders (their tmpfs included)."""
    total = 0
    for box in Path(tempfile.gettempdir()).glob(f"{PREFIX}{os.getpid()}-*"):
        for folder, _, names in os.walk(box):
            for name in names:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(folder, name)).st_blocks * 512
    return total


if __name__ == "__main__":
    asyncio.run(main())
