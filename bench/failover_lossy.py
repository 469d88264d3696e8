"""A lossy Redis failover under bench/chaos.py's runs: what losing the last writes costs.

tests/integration/test_sentinel_failover.py kills the primary with its replica in sync (no
write lost). Here the replica is stopped and cut off first and the primary killed
``--lose-s`` seconds later (``SentinelCluster.kill_primary_losing``), mid-flight (once the
runs asked ``--at`` model calls each on average): every write of those seconds is lost,
as a failover can lose them with ``redis.replicas_to_ack`` = 0 and replicas behind. Real
``python -m tasks.worker`` processes and a call keeper, the Celery broker on kombu's
Sentinel transport, the watchdog at the failover test's pace (2 s, stall 3 s).

A run ending inside the lost seconds is not ended (the new primary has it running): the
runs are watched from the new primary on, for the failover test's recovery time. Runs
whose creation was lost never end (``missing``), and are not counted stuck.

Printed: the chaos bench's lines (``bench failover_lossy: runs=… completed=…``, details,
agents' endings, runs not completed with their turns started more than once), then
``lossy: missing=… stuck=… quarantined=… lost_messages=… extra_llm_calls=… give_ups=…
unknown_run_raised=… dropped_no_agent=…`` (the last three counted in the workers' logs:
turns given up after their retries, turns that raised "unknown run", turns dropped
because neither their agent nor their run exists).

    .venv/bin/python bench/failover_lossy.py [--lose-s 1] [--runs 10] [--latency-ms 300]
        [--at 2] [--replicas-to-ack 0] [--logs DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench.chaos as chaos
from bench.chaos import ChaosConfig, Report, run_phase
from core.config import load_settings
from tests.fakes.llm_server import ThreadedFakeLLMServer
from tests.integration.sentinel_cluster import SentinelCluster
from tests.integration.test_sentinel_failover import WATCHDOG_TIMERS, _recovery_s


async def measure(args: argparse.Namespace) -> tuple[Report, Path, float]:
    """The runs through the lossy failover: their report, the workers' logs, and how long
    the new primary took to answer."""
    for name, value in WATCHDOG_TIMERS.items():
        os.environ[f"CARAMBA_{name.upper()}"] = value
    os.environ["CARAMBA_REDIS__REPLICAS_TO_ACK"] = str(args.replicas_to_ack)
    recovery_s = _recovery_s(load_settings())
    logs = Path(args.logs or tempfile.mkdtemp(prefix="caramba-lossy-"))
    failed_over: dict[str, float] = {}
    watched = chaos._ended

    async def ended(*read: object) -> set[str]:
        # Runs seen ended before the failover may be running again after it.
        return await watched(*read) if failed_over else set()  # type: ignore[arg-type]

    chaos._ended = ended  # type: ignore[assignment]
    cluster = SentinelCluster()
    cluster.start()
    try:
        with ThreadedFakeLLMServer() as server:

            async def failover(report: Report) -> None:
                started = time.monotonic()
                while time.monotonic() - started < 60:  # mid-flight
                    if len(server.requests) >= args.runs * args.at:
                        break
                    await asyncio.sleep(0.05)
                await asyncio.to_thread(cluster.kill_primary_losing, args.lose_s)
                killed = time.monotonic()
                report.kill_times.append(killed)
                await asyncio.to_thread(cluster.wait_for_failover)
                failed_over["s"] = time.monotonic() - killed
                report.deadline_s = time.monotonic() - started + recovery_s

            config = ChaosConfig(
                name="failover_lossy",
                runs=args.runs,
                kills=0,
                latency_ms=args.latency_ms,
                stagger_s=0.05,
                workers=2,
                concurrency=16,
                deadline_s=60 + recovery_s,
                short_timers=True,
                settle_s=10,
                redis_url=cluster.url,
                log_dir=logs,
            )
            report = await run_phase(server, config, disrupt=failover)
    finally:
        cluster.cleanup()
    return report, logs, failed_over.get("s", -1.0)


def main(args: argparse.Namespace) -> None:
    report, logs, failover_s = asyncio.run(measure(args))
    text = "\n".join(p.read_text(errors="replace") for p in sorted(logs.glob("*.log")))
    print(report.details())
    print(report.diagnosis())
    print(report.log_summary())
    print(report.line())
    missing = report.statuses.get("missing", 0)
    print(
        f"lossy: lose_s={args.lose_s} failover_s={failover_s:.1f} "
        f"replicas_to_ack={args.replicas_to_ack} missing={missing} "
        f"stuck={report.stuck - missing} quarantined={report.end_reasons.get('quarantined', 0)} "
        f"lost_messages={report.lost_messages} extra_llm_calls={report.extra_llm_calls} "
        f"give_ups={text.count('giving up')} unknown_run_raised={text.count('raised RunError')} "
        f"dropped_no_agent={text.count('no such agent')} logs={logs}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lose-s", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--latency-ms", type=float, default=300)
    parser.add_argument("--at", type=int, default=2, help="model calls per run before the cut")
    parser.add_argument("--replicas-to-ack", type=int, default=0)
    parser.add_argument("--logs", default="")
    main(parser.parse_args())
