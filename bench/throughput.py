"""Throughput of the production path: real Celery worker processes, real Redis, the
configured model client (``llm.client``: the direct OpenAI-compatible client by default;
``CARAMBA_BENCH_CLIENT=litellm`` for litellm) against the OpenAI-compatible fake at a fixed
latency.

    .venv/bin/python bench/throughput.py [--inflight-agents 1000] [--skip-inflight]

Two figures, as the last lines:

``bench cohort``: one cohort of 13 agents (orchestrator → 3 leads → 3 members each);
members take 5 turns each (4 calculations, then finish). The critical path is 9 model
calls (orchestrator, lead, 5 × member, lead, orchestrator), so ideal_s = 9 × llm_ms.
overhead_pct is what scheduling, Redis and Celery add to that path.

``bench inflight``: ``agents`` independent agents at once, 5 turns each (4 calculations,
then finish), on one worker host (as many worker processes as cores).
ideal_turns_per_s = agents / llm_s: every agent always has its model call in flight.
The workers stop taking turns (Celery's remote control) while this process approves the
runs, then all start at once: the clock runs from there (approving 1,000 runs from one
process, beside the fake, took 12 of the 24 s measured before; ``approved_s`` says how
long it takes). cpu_ms_per_turn is the workers' CPU time per turn (the fake server and
this process are not counted); rss_mb is the workers' resident memory at the end.

The host's cores bound the rate for any design: they also run the fake model (this
process) and Redis, whose CPU per turn is printed too (fake_and_redis_cpu_ms_per_turn).
cpu_bound_ratio is the ratio those CPU figures allow on this host (cores ÷ all the CPU a
turn costs), workerless_ratio the one a worker using no CPU at all would reach. With 2
cores, 1,000 agents at 500 ms ask for 2,000 turns a second: 1 ms of CPU per turn for
everything, fake and Redis included (2026-11-27: they alone took 1.8 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from redis.asyncio import Redis

from bench.throughput_probe import bounded, consume, cpu_s, others_cpu_s, rss_mb, wait_all
from core.config import Settings, load_settings
from core.llm.scripted import ScriptedModel
from core.process.wiring import build_services
from core.runs.control import approve_run, propose_run
from core.types import AgentSpec
from tasks.app import make_app
from tasks.scheduler import CeleryScheduler
from tests.fakes.llm_server import FakeReply, ThreadedFakeLLMServer
from tests.integration.processes import Process, worker_env

# CARAMBA_BENCH_REDIS_URL: another Redis (a private redis-server, to measure apart from
# the machine's other load; bench/throughput_hops.py --private-redis starts one).
URL = os.environ.get("CARAMBA_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
# litellm's hosted_vllm provider speaks the OpenAI wire format through litellm's own HTTP
# handler; "openai/..." goes through the openai SDK, whose per-request transformation of
# the messages costs ≈ 0.7 ms of CPU per turn of history (measured: 8.2 vs 2.8 ms per call
# at 5 turns, 17.3 vs 3.5 at 15). Override with CARAMBA_BENCH_MODEL=openai/fake-model.
MODEL = os.environ.get("CARAMBA_BENCH_MODEL", "hosted_vllm/fake-model")
# "" = the configured default (llm.client); "litellm" or "openai_compat" to choose.
CLIENT = os.environ.get("CARAMBA_BENCH_CLIENT", "")
_NAME = re.compile(r"You are (.+?), ")
_REDIS_PID = 0  # the Redis server's process (its CPU is reported beside the workers')


def _name(body: dict[str, Any]) -> str:
    found = _NAME.search(body["messages"][0].get("content") or "")
    return found.group(1) if found else "?"


def _calls(body: dict[str, Any], tool: str) -> int:
    return sum(
        c["function"]["name"] == tool
        for m in body["messages"]
        if m.get("role") == "assistant"
        for c in m.get("tool_calls") or ()
    )


def _results(body: dict[str, Any]) -> int:
    return sum(
        (m.get("content") or "").startswith("[Result from")
        for m in body["messages"]
        if m.get("role") == "user"
    )


def respond(body: dict[str, Any]) -> FakeReply:
    name = _name(body)
    # A parent sleeps until all its children have finished: their results come in one turn
    # (without it, the first result woke it, and the model call that found the others
    # still at work was one more 200 ms on the critical path, for the lead and again for
    # the orchestrator: most of the overhead this bench measured).
    wait: tuple[str, dict[str, Any]] = ("wait_for_messages", {"all_children": True})
    if name == "Orchestrator" or name.startswith("Lead"):
        if not _calls(body, "create_agent"):
            if name == "Orchestrator":
                kids = [(f"Lead {i}", "lead") for i in (1, 2, 3)]
            else:
                kids = [(f"Member {name[-1]}.{i}", "member") for i in (1, 2, 3)]
            creates = [
                (
                    "create_agent",
                    {
                        "name": kid,
                        "role": role,
                        "purpose": "work",
                        "tools": ["calculate", "create_agent"] if role == "lead" else ["calculate"],
                        "budget_share": 0.3,
                    },
                )
                for kid, role in kids
            ]
            return FakeReply(tool_calls=[*creates, wait])
        if _results(body) >= 3:
            return FakeReply(tool_calls=[("finish", {"result": f"{name}: all done"})])
        return FakeReply(tool_calls=[wait])
    n = _calls(body, "calculate")
    if n < 4:
        return FakeReply(tool_calls=[("calculate", {"expression": f"{n} + 1"})])
    return FakeReply(tool_calls=[("finish", {"result": f"{name}: {n}"})])


def client_settings(prefix: str, queue: str) -> Settings:
    return load_settings(
        redis={"url": URL, "key_prefix": prefix},
        celery={"queue": queue},
        limits={"stall_repeats": 50},
    )


async def _phase(
    server: ThreadedFakeLLMServer,
    *,
    llm_ms: int,
    roots: list[AgentSpec],
    processes: int,
    concurrency: int,
    timeout_s: float,
    calls_per_run: int = 0,
    hold: bool = False,
) -> dict[str, Any]:
    prefix, queue = f"bench-{uuid.uuid4().hex[:6]}", f"bench-{uuid.uuid4().hex[:6]}"
    env = worker_env(
        redis__url=URL,
        redis__key_prefix=prefix,
        celery__queue=queue,
        llm__model=MODEL,
        llm__api_base=server.base_url,
        # The workers call the model themselves, as the figures here always did (the call
        # keeper, on by default, is measured in bench/keeper.py).
        llm__keeper="false",
        limits__stall_repeats="50",
        # hold=True stops and starts the workers' consuming (Celery's remote control).
        celery__remote_control="true",
        **({"llm__client": CLIENT} if CLIENT else {}),
    )
    # CARAMBA_BENCH_WORKER=bench.throughput_trace: workers that log each turn's steps.
    module = os.environ.get("CARAMBA_BENCH_WORKER", "tasks.worker")
    procs = [
        Process([sys.executable, "-m", module, f"--concurrency={concurrency}"], env, f"w{i}")
        for i in range(processes)
    ]
    redis = Redis.from_url(URL, decode_responses=True)
    settings = client_settings(prefix, queue)
    app = make_app(settings)
    publisher = CeleryScheduler(app, settings)
    svc = build_services(settings, publisher, llm=ScriptedModel(), redis=redis)
    try:
        for proc in procs:
            proc.wait_for(" ready.", timeout=120)
        # Warm-up on these workers (imports, connections, the first turns), not measured.
        server.latency_s = 0.01
        warm = [
            await propose_run(svc, "warm-up", _orchestrator(), requested_by="bench")
            for _ in range(processes * 2)
        ]
        await asyncio.gather(*(approve_run(svc, r, "bench") for r in warm))
        await wait_all(redis, prefix, warm, timeout_s)
        server.latency_s = llm_ms / 1000
        proposed = await bounded(
            [propose_run(svc, "bench", root, requested_by="bench") for root in roots]
        )
        calls_before = len(server.requests)
        cpu_before = sum(cpu_s(p.pid) for p in procs)
        others_before = others_cpu_s(_REDIS_PID)
        if hold:
            await asyncio.to_thread(consume, app, queue, False, len(procs))
        t0 = time.perf_counter()
        t0_mono = time.monotonic()  # the fake's request_times' clock (bench/throughput_hops.py)
        await bounded([approve_run(svc, r, "bench") for r in proposed])
        approved_s = time.perf_counter() - t0
        ran_held = len(server.requests) - calls_before  # 0: the workers did hold off
        if hold:  # every agent's first turn is queued: all start now
            # The CPU is counted from here too: the approvals (this process publishing
            # 1,000 turn messages, Redis storing them) ran before the clock started and
            # were counted as the fake's and Redis's CPU per turn (~0.4 ms of the 0.95
            # "fake" and ~0.1 of Redis's 0.46 on 2026-11-28).
            cpu_before = sum(cpu_s(p.pid) for p in procs)
            others_before = others_cpu_s(_REDIS_PID)
            t0, t0_mono = time.perf_counter(), time.monotonic()
            await asyncio.to_thread(consume, app, queue, True, len(procs))
        wanted = calls_before + calls_per_run * len(proposed)
        waited = (server, wanted) if calls_per_run else None
        await wait_all(redis, prefix, list(proposed), timeout_s, waited)
        wall = time.perf_counter() - t0
        end_mono = time.monotonic()
        cpu = sum(cpu_s(p.pid) for p in procs) - cpu_before
        others = [b - a for a, b in zip(others_before, others_cpu_s(_REDIS_PID), strict=True)]
        turns = len(server.requests) - calls_before
        by_role = Counter(_name(b).split(" ")[0] for b in server.requests[calls_before:])
        failed = 0
        for run_id in proposed:
            raw = await redis.get(f"{prefix}:run:{run_id}") or ""
            failed += '"status":"completed"' not in raw
        return {
            "wall_s": wall,
            "approved_s": approved_s,
            "calls_while_held": ran_held,
            "turns": turns,
            "cpu_ms_per_turn": cpu * 1000 / max(1, turns),
            "rss_mb": sum(rss_mb(p.pid) for p in procs),
            "bench_cpu_ms_per_turn": others[0] * 1000 / max(1, turns),
            "redis_cpu_ms_per_turn": others[1] * 1000 / max(1, turns),
            "failed": failed,
            "turns_by_role": dict(by_role),
            "calls_before": calls_before,
            "t0_mono": t0_mono,
            "end_mono": end_mono,
        }
    finally:
        await publisher.aclose()
        app.close()
        for proc in procs:
            proc.cleanup()
        keys = [k async for k in redis.scan_iter(match=f"{prefix}:*", count=5000)]
        for i in range(0, len(keys), 5000):
            await redis.delete(*keys[i : i + 5000])
        await redis.aclose()


def _client_used() -> str:
    """Which client the workers call the model with (as the router decides)."""
    from core.llm.routes import is_direct

    llm = {"model": MODEL, "api_base": "http://127.0.0.1"} | ({"client": CLIENT} if CLIENT else {})
    return "openai_compat" if is_direct(load_settings(llm=llm).llm, MODEL) else "litellm"


def _orchestrator() -> AgentSpec:
    return AgentSpec(
        name="Orchestrator",
        role="orchestrator",
        tools=("create_agent", "wait_for_messages", "finish", "calculate"),
    )


async def main(args: argparse.Namespace) -> None:
    global _REDIS_PID
    cores = os.cpu_count() or 1
    probe = Redis.from_url(URL)
    _REDIS_PID = int((await probe.info("server"))["process_id"])
    await probe.aclose()
    with ThreadedFakeLLMServer() as server:
        server.set_responder(respond)
        # As `caramba worker` runs by default (celery.processes = 0): one process per core.
        cohort = await _phase(
            server,
            llm_ms=200,
            roots=[_orchestrator()],
            processes=args.cohort_processes or cores,
            concurrency=50,
            timeout_s=120,
        )
        ideal = 9 * 0.2
        cohort_line = (
            f"bench cohort: agents=13 turns=5 llm_ms=200 wall_s={cohort['wall_s']:.2f} "
            f"ideal_s={ideal:.2f} overhead_pct={(cohort['wall_s'] - ideal) / ideal * 100:.1f}"
        )
        print(f"cohort: {cohort}")
        inflight_line = ""
        if not args.skip_inflight:
            n = args.inflight_agents
            roots = [
                AgentSpec(name=f"Agent {i}", role="solo", tools=("calculate", "finish"))
                for i in range(n)
            ]
            slots = -(-n // cores) + 10
            flight = await _phase(
                server,
                llm_ms=500,
                roots=roots,
                processes=cores,
                concurrency=slots,
                timeout_s=600,
                calls_per_run=5,
                hold=True,
            )
            print(f"inflight: {flight}")
            rate = flight["turns"] / flight["wall_s"]
            ideal_rate = n / 0.5
            # What the host's cores allow: the fake model and Redis run on them too.
            beside = flight["bench_cpu_ms_per_turn"] + flight["redis_cpu_ms_per_turn"]
            cpu_bound = cores * 1000 / (flight["cpu_ms_per_turn"] + beside)
            inflight_line = (
                f"bench inflight: agents={n} llm_ms=500 turns_per_s={rate:.0f} "
                f"ideal_turns_per_s={ideal_rate:.0f} ratio={rate / ideal_rate:.2f} "
                f"cpu_ms_per_turn={flight['cpu_ms_per_turn']:.2f} rss_mb={flight['rss_mb']:.0f} "
                f"fake_and_redis_cpu_ms_per_turn={beside:.2f} "
                f"cpu_bound_ratio={min(cpu_bound, ideal_rate) / ideal_rate:.2f} "
                f"workerless_ratio={min(cores * 1000 / beside, ideal_rate) / ideal_rate:.2f}"
            )
    print(f"model: {MODEL} ({_client_used()}) against the OpenAI-compatible fake")
    print(cohort_line)
    if inflight_line:
        print(inflight_line)


if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inflight-agents", type=int, default=1000)
    parser.add_argument("--skip-inflight", action="store_true")
    parser.add_argument(
        "--cohort-processes", type=int, default=0, help="worker processes (0: one per core)"
    )
    asyncio.run(main(parser.parse_args()))
