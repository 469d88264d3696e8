"""How fast a turn worker starts, and how big it is once started, with an
OpenAI-compatible model configured (``openai/gpt-4o-mini`` through the direct client):

    .venv/bin/python bench/startup.py [--runs 3]

- start_s: a real ``python -m tasks.worker --concurrency=4`` process (as ``caramba worker``
  starts each of its workers), from its spawn to Celery's `` ready.`` line: imports,
  settings, the Redis check, the Celery worker's boot and the turn runtime (services,
  MCP tools, the background loops). Median of ``--runs``.
- rss_mb: the worker's resident memory once ready (median).
- import_s: ``import tasks.worker`` alone in a fresh interpreter (median).
- keeper_s / keeper_rss_mb: the same for the host's call keeper
  (``python -m core.process.keeper_main``, started beside the workers), to its
  ``ready.`` line.
- heavy: the heavy modules (litellm, onnxruntime, tokenizers, mcp, playwright) the
  worker process had imported once ready, ``-`` if none (read from the process itself
  through ``CARAMBA_BENCH_MODULES``, a file it writes at its ``ready`` line).

Real Redis on 127.0.0.1:6379 (db 15, a key prefix and queue of the bench's own, removed
afterwards); no model is called. Last line:
``bench startup: start_s=… rss_mb=… import_s=… keeper_s=… keeper_rss_mb=… heavy=…``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from redis import Redis

from core.config import PROJECT_ROOT

URL = "redis://127.0.0.1:6379/15"
MODEL = "openai/gpt-4o-mini"
HEAVY = ("litellm", "onnxruntime", "tokenizers", "mcp", "playwright")
_TIMEOUT_S = 60.0

# Run in the worker, once its Celery worker is ready: which heavy modules it holds.
_PROBE = """
import os, sys
from celery import signals

def _dump(sender=None, **_):
    heavy = [m for m in {heavy!r} if m in sys.modules]
    with open(os.environ["CARAMBA_BENCH_MODULES"], "w") as f:
        f.write(",".join(heavy))

signals.worker_ready.connect(_dump, weak=False)
import runpy
runpy.run_module("tasks.worker", run_name="__main__")
"""


def bench_env(prefix: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(PROJECT_ROOT),
        PYTHONUNBUFFERED="1",
        CARAMBA_REDIS__URL=URL,
        CARAMBA_REDIS__KEY_PREFIX=prefix,
        CARAMBA_CELERY__QUEUE=f"{prefix}-turns",
        CARAMBA_LLM__MODEL=MODEL,
        CARAMBA_LLM__CLIENT=os.environ.get("BENCH_CLIENT", "openai_compat"),
        CARAMBA_LLM__API_BASE="http://127.0.0.1:9/v1",  # never called
    )
    env.setdefault("OPENAI_API_KEY", "sk-bench")
    return env


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def start_once(args: list[str], env: dict[str, str], ready: str) -> tuple[float, float]:
    """Spawn ``args``; seconds until ``ready`` is in its output, and its RSS then."""
    with tempfile.NamedTemporaryFile(prefix="caramba-start-", suffix=".log") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(args, env=env, cwd=PROJECT_ROOT, stdout=out, stderr=out)
        try:
            path = Path(out.name)
            while ready not in path.read_text(errors="replace"):
                if proc.poll() is not None or time.perf_counter() - t0 > _TIMEOUT_S:
                    raise SystemExit(f"{args} did not start:\n{path.read_text()[-3000:]}")
                time.sleep(0.005)
            took = time.perf_counter() - t0
            return took, _rss_mb(proc.pid)
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def import_once(env: dict[str, str]) -> float:
    code = "import time; t = time.perf_counter(); import tasks.worker; "
    code += "print(time.perf_counter() - t)"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    return float(out.stdout.strip())


def main(runs: int) -> None:
    prefix = f"bench-start-{uuid.uuid4().hex[:6]}"
    env = bench_env(prefix)
    modules = Path(tempfile.mkstemp(prefix="caramba-modules-")[1])
    env["CARAMBA_BENCH_MODULES"] = str(modules)
    worker = [sys.executable, "-c", _PROBE.format(heavy=HEAVY), "--concurrency=4"]
    keeper = [sys.executable, "-m", "core.process.keeper_main"]
    try:
        starts = [start_once(worker, env, " ready.") for _ in range(runs)]
        keepers = [start_once(keeper, env, " ready.") for _ in range(runs)]
        imports = [import_once(env) for _ in range(runs)]
        heavy = modules.read_text() or "-"
    finally:
        modules.unlink(missing_ok=True)
        client = Redis.from_url(URL)
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        keys += list(client.scan_iter(match=f"*{prefix}-turns*", count=1000))
        if keys:
            client.delete(*keys)
        client.close()
    for i, ((s, r), (ks, kr), imp) in enumerate(zip(starts, keepers, imports, strict=True)):
        print(
            f"run {i}: worker {s:.2f} s {r:.0f} MB, keeper {ks:.2f} s {kr:.0f} MB, "
            f"import {imp:.2f} s"
        )
    med = statistics.median
    print(
        f"bench startup: start_s={med(s for s, _ in starts):.2f} "
        f"rss_mb={med(r for _, r in starts):.0f} import_s={med(imports):.2f} "
        f"keeper_s={med(s for s, _ in keepers):.2f} "
        f"keeper_rss_mb={med(r for _, r in keepers):.0f} heavy={heavy}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    main(parser.parse_args().runs)
