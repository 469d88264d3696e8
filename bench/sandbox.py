"""What one run_code call costs: 100 runs of `print(1+1)` through the tool's own path
(the run's files materialised, bubblewrap, the limits, the files synced back, the folder
removed) against a small local workspace, and, for scale, the same interpreter started
bare (no sandbox) and a bare `bwrap … true` of the same layout.

Needs bubblewrap (`apt-get install bubblewrap`); no services. Run:
    .venv/bin/python bench/sandbox.py
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from core.config_tools import SandboxSettings
from core.tools.sandbox import probe, run_code_in_sandbox
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


if __name__ == "__main__":
    asyncio.run(main())
