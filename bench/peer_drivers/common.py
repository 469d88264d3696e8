"""What every system's driver shares (standard library only: drivers run in the peers'
own virtual environments, which do not have this project installed).

The workload (the model's side is ``bench/peers.py``'s responder):

- ``cohort``: an orchestrator delegates to 3 leads, each lead to 3 members (13 agents).
  Each agent makes 5 model calls: a parent's first asks to delegate (its children run
  concurrently; the call's tool returns when they have all answered), then 3 ``calculate``
  calls and a final answer; a member's are 4 ``calculate`` calls and a final answer.
- ``flat``: ``n`` independent agents at once, 5 calls each (4 ``calculate``, an answer).

A driver prints one JSON line: the process CPU seconds of the measured phase (all threads),
its wall time per repetition, and the process's peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import time
from collections.abc import Awaitable, Callable

# Agent -> its children, by name; the names are how the fake model recognises an agent
# (every system prompt starts "You are <name>,").
TEAM = {"Orchestrator": [f"Lead {i}" for i in (1, 2, 3)]} | {
    f"Lead {i}": [f"Member {i}.{j}" for j in (1, 2, 3)] for i in (1, 2, 3)
}
# Every peer's model client gets one time-out for the whole call, as Caramba's has
# (llm.timeout_s): the openai SDK's own 5 s to connect failed AutoGen's 1,000 agents
# connecting at once on a slow 2-core machine (its loop busy with the agents' own work).
TIMEOUT_S = 60.0


def instructions(name: str) -> str:
    role = "orchestrator" if name == "Orchestrator" else name.split(" ")[0].lower()
    return (
        f"You are {name}, a {role} in a team of agents. Use the tools you are given to do "
        "the task, then answer with the result."
    )


def calculate(expression: str) -> str:
    """Evaluate a sum of two integers like '2 + 3'."""
    left, _, right = expression.partition("+")
    return str(int(left) + int(right or 0))


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rss_mb() -> float:
    """Peak RSS of this process (VmHWM). Not ``ru_maxrss``: after fork and exec that can
    keep the parent's peak (the bench's own process, which holds every request)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--phase", choices=("cohort", "flat"), required=True)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1)
    return parser.parse_args()


async def measure(
    one: Callable[[str], Awaitable[object]],
    cohort: Callable[[], Awaitable[object]],
    *,
    cpu: Callable[[], float] = cpu_s,
    rss: Callable[[], float] = rss_mb,
    settled: Callable[[], Awaitable[object]] | None = None,
) -> None:
    """Warm up with one agent (imports, connections), then run the phase and report.
    ``settled``: awaited after the warm-up, before the phase: what the warm-up's run left
    to do after it ended is done (Caramba: its run recorded in the agent library, whose
    embedder loads on first use) — else that one-off work falls in the phase or not, by
    timing, differently for each way a system runs.

    ``one(name)`` runs a single agent without children; ``cohort()`` runs the 13 agents
    from the orchestrator down. ``cpu`` and ``rss`` measure the process that does the work
    (this one, unless it hands the work to others)."""
    opts = args()
    os.environ.setdefault("BENCH_BASE_URL", opts.base_url)
    await one("Warmup 0")
    if settled is not None:
        await settled()
    gc.collect()
    walls: list[float] = []
    profile = None
    # BENCH_CPROFILE: where to write a cProfile of the phase ("{phase}" is replaced by its name)
    if os.environ.get("BENCH_CPROFILE"):
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
    cpu0 = cpu()
    for _ in range(opts.repeat):
        t0 = time.perf_counter()
        if opts.phase == "cohort":
            await cohort()
        else:
            await asyncio.gather(*(one(f"Agent {i}") for i in range(opts.n)))
        walls.append(time.perf_counter() - t0)
    spent = cpu() - cpu0
    if profile is not None:
        profile.disable()
        profile.dump_stats(os.environ["BENCH_CPROFILE"].replace("{phase}", opts.phase))
    print("BENCH " + json.dumps({"cpu_s": spent, "walls": walls, "rss_mb": rss()}), flush=True)
