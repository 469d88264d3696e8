"""What the call keeper costs: the same load run twice on the production path, the turns'
model calls made by the worker itself (``llm.keeper`` off) and by the host's call keeper
(on, the default: a separate ``python -m core.process.keeper_main`` process, as
``caramba worker`` starts it).

    .venv/bin/python bench/keeper.py [--agents 10] [--llm-ms 100] [--rounds 10]

Real ``python -m tasks.worker`` process (one), real Redis (db 14, a prefix of the
bench's), litellm against the OpenAI-compatible fake (tests/fakes/llm_server.py) at
``--llm-ms``. The load: ``--agents`` solo agents at once, 5 turns each (4 calculations,
then finish: bench/throughput.py's members). Both modes' processes run side by side
(each on its own key prefix and queue), idle but for their own rounds; each mode runs
``--rounds`` loads, the two modes taking turns, after a warm-up round each.

- step: the time between two consecutive model requests of one agent at the fake = the
  model's latency + everything a turn does around its call (apply, save, the next turn's
  start) + the keeper's hop when on. ``added`` is kept − direct, p50 and p99 over every
  step of every round.
- cpu per call: CPU time of the worker process (and of the keeper, when on) over the
  measured load, divided by the model calls.

Last line: ``bench keeper: calls=… step_p50_ms direct=… kept=… added=… step_p99_ms
direct=… kept=… added=… cpu_ms_per_call direct=… kept=… (worker … + keeper …) ratio=…``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from redis.asyncio import Redis

from bench.throughput import (
    MODEL,
    URL,
    _bounded,
    _cpu_s,
    _name,
    _wait_all,
    client_settings,
    respond,
)
from core.llm.scripted import ScriptedModel
from core.process.wiring import build_services
from core.runs.control import approve_run, propose_run
from core.types import AgentSpec
from tasks.app import make_app
from tasks.scheduler import CeleryScheduler
from tests.fakes.llm_server import ThreadedFakeLLMServer
from tests.integration.processes import Process, worker_env


def _roots(n: int, tag: str) -> list[AgentSpec]:
    return [
        AgentSpec(name=f"Agent {tag}.{i}", role="solo", tools=("calculate", "finish"))
        for i in range(n)
    ]


class _Setup:
    """One mode's processes (a worker; and the keeper when ``kept``) and its client."""

    def __init__(self, server: ThreadedFakeLLMServer, *, kept: bool, agents: int) -> None:
        self.server, self.kept, self.agents = server, kept, agents
        self.prefix = queue = f"bench-keeper-{uuid.uuid4().hex[:6]}"
        env = worker_env(
            redis__url=URL,
            redis__key_prefix=self.prefix,
            celery__queue=queue,
            llm__model=MODEL,
            llm__api_base=server.base_url,
            llm__keeper="true" if kept else "false",
            limits__stall_repeats="50",
        )
        self.procs = [Process.worker(env, f"{self.prefix}-worker", concurrency=agents + 10)]
        if kept:
            keeper = [sys.executable, "-m", "core.process.keeper_main"]
            self.procs.append(Process(keeper, env, "keeper"))
        self.redis = Redis.from_url(URL, decode_responses=True)
        settings = client_settings(self.prefix, queue)
        self.app = make_app(settings)
        self.publisher = CeleryScheduler(self.app, settings)
        self.svc = build_services(settings, self.publisher, llm=ScriptedModel(), redis=self.redis)
        self.out: dict[str, list[float]] = {"steps": [], "calls": [], "worker": [], "keeper": []}

    async def ready(self) -> None:
        for proc in self.procs:
            await asyncio.to_thread(proc.wait_for, " ready.", 120)

    async def round(self, measured: bool) -> None:
        """One load: ``agents`` solo agents at once, to their end."""
        tag = uuid.uuid4().hex[:6]
        svc, server = self.svc, self.server
        starts = [
            propose_run(svc, "bench", r, requested_by="bench") for r in _roots(self.agents, tag)
        ]
        proposed = await _bounded(starts)
        first = len(server.requests)
        cpu = [_cpu_s(p.pid) for p in self.procs]
        await _bounded([approve_run(svc, run_id, "bench") for run_id in proposed])
        await _wait_all(self.redis, self.prefix, list(proposed), 300)
        cpu = [_cpu_s(p.pid) - before for p, before in zip(self.procs, cpu, strict=True)]
        if not measured:
            return
        arrivals: dict[str, list[float]] = {}
        bodies = server.requests[first:]
        for body, at in zip(bodies, server.request_times[first:], strict=False):
            if f"Agent {tag}." in _name(body):
                arrivals.setdefault(_name(body), []).append(at)
        for times in arrivals.values():
            self.out["steps"] += [(b - a) * 1000 for a, b in itertools.pairwise(times)]
        self.out["calls"].append(sum(len(t) for t in arrivals.values()))
        self.out["worker"].append(cpu[0])
        self.out["keeper"].append(cpu[1] if self.kept else 0.0)

    async def close(self) -> None:
        through = "turns' calls go to the call keeper" in self.procs[0].output()
        await self.publisher.aclose()
        self.app.close()
        for proc in self.procs:
            proc.cleanup()
        found = [k async for k in self.redis.scan_iter(match=f"{self.prefix}:*", count=5000)]
        for i in range(0, len(found), 5000):
            await self.redis.delete(*found[i : i + 5000])
        await self.redis.aclose()
        # The kept turns' calls went through the keeper (the worker says so), the others not.
        assert through == self.kept, f"keeper {self.kept}: calls through it {through}"


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else 0.0


async def main(args: argparse.Namespace) -> None:
    with ThreadedFakeLLMServer() as server:
        server.set_responder(respond)
        server.latency_s = args.llm_ms / 1000
        t0 = time.monotonic()
        modes = [_Setup(server, kept=False, agents=args.agents)]
        modes.append(_Setup(server, kept=True, agents=args.agents))
        try:
            for mode in modes:
                await mode.ready()
            for r in range(args.rounds + 1):  # round 0 of each: the warm-up
                for mode in modes if r % 2 else modes[::-1]:  # alternating, so that a
                    await mode.round(measured=r > 0)  # neighbour's load hits both alike
        finally:
            for mode in modes:
                await mode.close()
    direct, kept = modes[0].out, modes[1].out
    calls_d, calls_k = sum(direct["calls"]), sum(kept["calls"])
    cpu_d = sum(direct["worker"]) * 1000 / max(1, calls_d)
    cpu_kw = sum(kept["worker"]) * 1000 / max(1, calls_k)
    cpu_kk = sum(kept["keeper"]) * 1000 / max(1, calls_k)
    p50 = (_pct(direct["steps"], 50), _pct(kept["steps"], 50))
    p99 = (_pct(direct["steps"], 99), _pct(kept["steps"], 99))
    print(
        f"model: {MODEL} (litellm) against the OpenAI-compatible fake at {args.llm_ms} ms; "
        f"{args.agents} agents × 5 turns at once, {args.rounds} rounds per mode, alternating; "
        f"one worker process; {time.monotonic() - t0:.0f} s"
    )
    print(
        f"bench keeper: calls={calls_d}/{calls_k} "
        f"step_p50_ms direct={p50[0]:.1f} kept={p50[1]:.1f} added={p50[1] - p50[0]:.1f} "
        f"step_p99_ms direct={p99[0]:.1f} kept={p99[1]:.1f} added={p99[1] - p99[0]:.1f} "
        f"cpu_ms_per_call direct={cpu_d:.2f} kept={cpu_kw + cpu_kk:.2f} "
        f"(worker {cpu_kw:.2f} + keeper {cpu_kk:.2f}) ratio={(cpu_kw + cpu_kk) / cpu_d:.2f}"
    )


if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--llm-ms", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=10)
    asyncio.run(main(parser.parse_args()))
