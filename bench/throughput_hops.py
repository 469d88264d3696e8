"""Where the cohort's critical path of bench/throughput.py loses time, hop by hop.

    .venv/bin/python bench/throughput_hops.py [--runs 3] [--cohort-processes 0]

Runs the cohort phase of bench/throughput.py ``--runs`` times and reads the fake model's
request log (arrival of each call): a hop is the time from one critical-path call's answer
(its arrival + the fake's latency) to the arrival of the next call on the path. Kinds:

- ``start``: approving the run to the orchestrator's first call (a Celery publish, consume);
- ``spawn``: a parent's delegating call to a child's first call (the first child runs
  chained in the same task, the others are published);
- ``chain``: a member's call to its own next call (chained in the same task);
- ``wake``: the last child's final call to its parent's next call (the child's result
  wakes the parent);
- ``end``: the root's last call to the bench seeing the run ended.

Prints each kind's hops (ms) per run and their sums; ``overhead_ms`` is the critical path
minus 9 × the latency. Other load on the machine shows up here too: compare within a run.
``--private-redis`` runs a redis-server of its own (no persistence, like the shared one),
``--nice N`` (negative: root) the bench, its workers and that server at another priority:
with both, the hops are this design's and not the machine's other load.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import socket
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import throughput
from tests.fakes.llm_server import ThreadedFakeLLMServer

LLM_S = 0.2


def critical_calls(
    server: ThreadedFakeLLMServer, result: dict[str, Any]
) -> list[tuple[str, float]]:
    """The critical path's calls, (agent name, arrival), in order."""
    first = result["calls_before"]
    calls: dict[str, list[float]] = defaultdict(list)
    for body, at in zip(server.requests[first:], server.request_times[first:], strict=True):
        calls[throughput._name(body)].append(at)
    leads = [n for n in calls if n.startswith("Lead")]
    lead = max(leads, key=lambda n: calls[n][-1])
    members = [n for n in calls if n.startswith(f"Member {lead[-1]}.")]
    member = max(members, key=lambda n: calls[n][-1])
    orch = calls["Orchestrator"]
    return [
        ("Orchestrator", orch[0]),
        (lead, calls[lead][0]),
        *((member, at) for at in calls[member]),
        (lead, calls[lead][-1]),
        ("Orchestrator", orch[-1]),
    ]


def timeline(trace_dir: Path, path: list[tuple[str, float]], t0: float) -> None:
    """Every traced step between one critical call's answer and the next call."""
    events: list[tuple[float, str]] = []
    for file in trace_dir.glob("*.trace"):
        for line in file.read_text().splitlines():
            stamp, thread, turn, event = line.split(" ", 3)
            events.append((float(stamp), f"{file.stem} {thread} {turn} {event}"))
    events.sort()
    starts = [t0, *(at + LLM_S for _, at in path)]
    for (name, at), since in zip(path, starts, strict=False):
        print(f"-- to {name}'s call at +{(at - since) * 1000:.1f} ms")
        for when, what in events:
            if since - 0.003 <= when <= at + 0.002:
                print(f"   {(when - since) * 1000:7.2f} {what}")
    for file in trace_dir.glob("*.trace"):  # the next run's workers are new processes
        file.unlink()


def traced(trace_dir: Path) -> None:
    """The workers started from here on log their turns' steps into ``trace_dir``."""
    os.environ["CARAMBA_BENCH_WORKER"] = "bench.throughput_trace"
    os.environ["CARAMBA_TRACE_DIR"] = str(trace_dir)
    trace_dir.mkdir(parents=True, exist_ok=True)


def hops(server: ThreadedFakeLLMServer, result: dict[str, Any]) -> list[tuple[str, float]]:
    """The critical path's hops, (kind, ms), in order."""
    first = result["calls_before"]
    calls: dict[str, list[float]] = defaultdict(list)
    for body, at in zip(server.requests[first:], server.request_times[first:], strict=True):
        calls[throughput._name(body)].append(at)
    t0, end = result["t0_mono"], result["end_mono"]
    path: list[tuple[str, float]] = []

    def ms(a: float, b: float) -> float:
        return (b - a) * 1000

    orch = calls["Orchestrator"]
    path.append(("start", ms(t0, orch[0])))
    # The child that set the parent's wake is the one whose last call came last.
    leads = [n for n in calls if n.startswith("Lead")]
    lead = max(leads, key=lambda n: calls[n][-1])
    path.append(("spawn", ms(orch[0] + LLM_S, calls[lead][0])))
    members = [n for n in calls if n.startswith(f"Member {lead[-1]}.")]
    member = max(members, key=lambda n: calls[n][-1])
    path.append(("spawn", ms(calls[lead][0] + LLM_S, calls[member][0])))
    mine = calls[member]
    path.extend(("chain", ms(a + LLM_S, b)) for a, b in itertools.pairwise(mine))
    path.append(("wake", ms(mine[-1] + LLM_S, calls[lead][-1])))
    path.append(("wake", ms(calls[lead][-1] + LLM_S, orch[-1])))
    path.append(("end", ms(orch[-1] + LLM_S, end)))
    return path


def private_redis() -> subprocess.Popen[bytes]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    time.sleep(0.3)
    throughput.URL = f"redis://127.0.0.1:{port}/14"
    return proc


async def main(args: argparse.Namespace) -> None:
    if args.trace:
        traced(Path(args.trace))
    if args.nice:
        os.nice(args.nice)
    server_proc = private_redis() if args.private_redis else None
    try:
        await measure(args)
    finally:
        if server_proc is not None:
            server_proc.terminate()
            server_proc.wait(5)


async def measure(args: argparse.Namespace) -> None:
    probe = throughput.Redis.from_url(throughput.URL)
    throughput._REDIS_PID = int((await probe.info("server"))["process_id"])
    await probe.aclose()
    cores = os.cpu_count() or 1
    by_kind: dict[str, list[float]] = defaultdict(list)
    with ThreadedFakeLLMServer() as server:
        server.set_responder(throughput.respond)
        for _ in range(args.runs):
            result = await throughput._phase(
                server,
                llm_ms=int(LLM_S * 1000),
                roots=[throughput._orchestrator()],
                processes=args.cohort_processes or cores,
                concurrency=50,
                timeout_s=120,
            )
            path = hops(server, result)
            if args.trace:
                timeline(Path(args.trace), critical_calls(server, result), result["t0_mono"])
            over = result["wall_s"] * 1000 - 9 * LLM_S * 1000
            line = " ".join(f"{k}={v:.1f}" for k, v in path)
            print(f"run: wall_s={result['wall_s']:.3f} overhead_ms={over:.0f} {line}")
            for kind, value in path:
                by_kind[kind].append(value)
    for kind, values in by_kind.items():
        print(
            f"hops {kind}: n={len(values)} median_ms={statistics.median(values):.1f} "
            f"min_ms={min(values):.1f} max_ms={max(values):.1f}"
        )


if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cohort-processes", type=int, default=0)
    parser.add_argument("--private-redis", action="store_true")
    parser.add_argument("--nice", type=int, default=0)
    parser.add_argument("--trace", default="", help="a folder: workers log each turn's steps")
    asyncio.run(main(parser.parse_args()))
