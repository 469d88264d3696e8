"""What an idle worker asks of Redis: one ``python -m tasks.worker`` with nothing to do,
on a ``redis-server`` of its own (so every command counted is the worker's), commands per
second over ``--seconds`` from ``INFO commandstats`` (a pipeline's commands count one
each), after ``--settle`` seconds for start-up.

    .venv/bin/python bench/idle.py [--seconds 20] [--settle 10]

Prints the commands by name and
``bench idle: commands_per_s=… seconds=…``. Needs ``redis-server`` on the PATH.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from redis import Redis  # noqa: E402

from tests.integration.processes import Process, RedisServer, worker_env  # noqa: E402


def commandstats(client: Redis) -> dict[str, int]:
    stats = client.info("commandstats")
    return {
        name.removeprefix("cmdstat_"): int(v["calls"])
        for name, v in stats.items()
        if name not in ("cmdstat_info",)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--settle", type=float, default=10.0)
    opts = parser.parse_args()
    server = RedisServer()
    server.start()
    worker = None
    try:
        env = worker_env(
            redis__url=server.url,
            redis__key_prefix="idle",
            llm__model="openai/fake-model",
            llm__api_base="http://127.0.0.1:9/v1",  # never called
        )
        worker = Process.worker(env, "idle-worker")
        worker.wait_for(" ready.", timeout=120)
        time.sleep(opts.settle)
        client = Redis(host="127.0.0.1", port=server.port)
        before = commandstats(client)
        time.sleep(opts.seconds)
        after = commandstats(client)
        client.close()
        delta = {k: after[k] - before.get(k, 0) for k in after if after[k] > before.get(k, 0)}
        total = sum(delta.values())
        for name, calls in sorted(delta.items(), key=lambda kv: -kv[1]):
            print(f"{name:<20}{calls / opts.seconds:>8.2f}/s")
        print(f"bench idle: commands_per_s={total / opts.seconds:.2f} seconds={opts.seconds:.0f}")
    finally:
        if worker is not None:
            worker.cleanup()
        server.cleanup()


if __name__ == "__main__":
    main()
