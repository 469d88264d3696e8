"""What ``redis.replicas_to_ack`` costs a turn's save: milliseconds per commit (the real
save script, ``Store.commit_turn``, one agent's turns one after another) with 0 replicas
wanted (no WAIT) and with 1 (the marker write and ``WAIT 1``, one more round trip), on a
primary and one replica of our own on loopback, alternating, best of ``--rounds``.

    .venv/bin/python bench/redis_wait.py [--commits 2000] [--rounds 5]

Prints ``bench redis_wait: off_ms=… wait1_ms=… extra_ms=…`` (per commit, wall clock).
Starts and removes its own redis-servers (tests/integration/sentinel_cluster.py, no
Sentinels); the shared Redis is not used.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.config import load_settings  # noqa: E402
from core.process.wiring import connect_redis  # noqa: E402
from core.state.durable_writes import require_replicas, short_acks  # noqa: E402
from core.state.keys import Keys  # noqa: E402
from core.state.store import Store  # noqa: E402
from core.types import AgentSpec  # noqa: E402
from core.types.agent import AgentState  # noqa: E402
from core.types.chat import Usage  # noqa: E402
from tests.integration.sentinel_cluster import SentinelCluster  # noqa: E402


async def ms_per_commit(store: Store, run_id: str, commits: int) -> float:
    """``commits`` saves of one agent's turns, each after the one before (as a chain)."""
    state = AgentState(spec=AgentSpec(name="Bench"), run_id=run_id)
    await store.create_agent(state, [])
    usage = Usage(prompt_tokens=10, completion_tokens=5)
    start = time.perf_counter()
    for seq in range(commits):
        state = state.model_copy(update={"seq": seq + 1})
        saved = await store.commit_turn(state, seq, [], usage)
        assert saved.saved, saved
    return (time.perf_counter() - start) / commits * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    cluster = SentinelCluster(replicas=1, sentinels=0)
    cluster.start()
    best = {0: float("inf"), 1: float("inf")}
    try:
        url = cluster.primary.url
        stores = {}
        for wanted in best:
            settings = load_settings(redis={"url": url, "replicas_to_ack": wanted})
            client = connect_redis(settings)
            require_replicas(client, wanted, settings.redis.replicas_ack_timeout_ms)
            stores[wanted] = (client, Store(client, Keys(f"bench-wait{wanted}"), 1000))
        for wanted, (_, store) in stores.items():  # warm up
            await ms_per_commit(store, f"warm-{wanted}", 200)
        for i in range(opts.rounds):
            for wanted, (_, store) in stores.items():
                took = await ms_per_commit(store, f"r{i}-{wanted}", opts.commits)
                best[wanted] = min(best[wanted], took)
        short = short_acks(stores[1][0])
        for client, _ in stores.values():
            await client.aclose()
    finally:
        cluster.cleanup()
    print(f"per commit, best of {opts.rounds} x {opts.commits}:")
    print(f"  replicas_to_ack = 0 (no WAIT): {best[0]:.3f} ms")
    print(f"  replicas_to_ack = 1 (WAIT 1):  {best[1]:.3f} ms  ({short} short acks)")
    print(
        f"bench redis_wait: off_ms={best[0]:.3f} wait1_ms={best[1]:.3f} "
        f"extra_ms={best[1] - best[0]:.3f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
