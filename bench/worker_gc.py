"""What a full garbage collection costs a turn worker, with and without ``gc.freeze()``.

    .venv/bin/python bench/worker_gc.py [--redis redis://127.0.0.1:6379/15] [--repeat 7]

Builds what a worker process holds once it is ready — Celery's worker modules, the app,
its turn runtime started (Services, the event loop, the background loop) on the given
Redis with an OpenAI-compatible model — then times a full collection (``gc.collect()``,
CPU, median of ``--repeat``) before and after moving every object into the permanent
generation as ``tasks.worker`` does once its consumer is ready (``freeze_startup_objects``).
Also the objects the collector tracks and the process's RSS around the freeze (freezing
copies nothing: the RSS should not move). Under load the collection's CPU is the pause
the turns' loop takes each time one runs (docs/benchmarks.md: 91-236 ms).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def full_collection_ms(repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        gc.collect()
        times.append((time.process_time() - start) * 1000)
    return round(statistics.median(times), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/15")
    parser.add_argument("--repeat", type=int, default=7)
    opts = parser.parse_args()

    import celery.bin.worker  # what the worker process imports to start
    import celery.worker.consumer  # noqa: F401

    from core.config import load_settings
    from tasks.app import make_app, runtime_of
    from tasks.worker import freeze_startup_objects

    prefix = f"bench-gc-{uuid.uuid4().hex[:8]}"
    settings = load_settings(
        redis={"url": opts.redis, "key_prefix": prefix},
        celery={"queue": f"{prefix}-turns"},
        llm={"model": "openai/gpt-4o-mini", "client": "openai_compat"},
    )
    runtime = runtime_of(make_app(settings))
    runtime.start()
    try:
        gc.collect()
        tracked = len(gc.get_objects())
        before_ms = full_collection_ms(opts.repeat)
        rss_before = rss_mb()
        freeze_startup_objects()
        rss_after = rss_mb()
        after_ms = full_collection_ms(opts.repeat)
        left = len(gc.get_objects())
        frozen = gc.get_freeze_count()
    finally:
        gc.unfreeze()
        runtime.stop(grace_s=1)
    print(
        json.dumps(
            {
                "objects_tracked": tracked,
                "full_collection_cpu_ms": {"unfrozen": before_ms, "frozen": after_ms},
                "frozen_objects": frozen,
                "tracked_after_freeze": left,
                "rss_mb": {"before_freeze": round(rss_before, 1), "after": round(rss_after, 1)},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
