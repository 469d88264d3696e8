"""What a turn pays to read its run: the whole record (a 13-agent cohort with its
prompts and history) against the run's head (status, pause, budget, deadline), read
from the same Redis by `Store.turn_start` and parsed, in the same run.

Needs Redis on 127.0.0.1:6379 (uses db 15, removes its keys). Run:
    .venv/bin/python bench/run_head.py
"""

from __future__ import annotations

import asyncio
import time
import uuid

from redis.asyncio import Redis

from core.state.keys import Keys
from core.state.store import Store
from core.types.agent import AgentSpec
from core.types.cohort import Cohort
from core.types.run import RunBudget, RunState, RunStatus, Transition

READS = 2000
PROMPT = "You research one part of the task and report back with sources. " * 40


def big_run() -> RunState:
    root = AgentSpec(name="Orchestrator", role="orchestrator", system_prompt=PROMPT)
    agents = [root]
    for t in range(3):
        lead = AgentSpec(name=f"Lead {t}", role="lead", parent_id=root.id, system_prompt=PROMPT)
        agents.append(lead)
        agents += [
            AgentSpec(name=f"M{t}.{m}", role="member", parent_id=lead.id, system_prompt=PROMPT)
            for m in range(3)
        ]
    cohort = Cohort(task="Compare three vendors", agents=tuple(agents))
    history = [
        Transition(from_status=RunStatus.PROPOSED, to_status=RunStatus.APPROVED, by="@ana"),
        Transition(from_status=RunStatus.APPROVED, to_status=RunStatus.RUNNING, by="@ana"),
    ]
    return RunState(
        id=f"run_{uuid.uuid4().hex[:8]}",
        task=cohort.task,
        status=RunStatus.RUNNING,
        root_agent_id=root.id,
        root=root,
        cohort=cohort,
        budget=RunBudget(tokens=1_000_000, cost_usd=5.0, wall_clock_s=1800),
        history=history,
    )


async def main() -> None:
    redis = Redis.from_url("redis://127.0.0.1:6379/15", decode_responses=True)
    prefix = f"bench-{uuid.uuid4().hex[:6]}"
    store = Store(redis, Keys(prefix), 1000)
    run = big_run()
    try:
        await store.create_run(run)
        record = await redis.get(store.keys.run(run.id)) or ""
        head = await redis.get(store.keys.run_head(run.id)) or ""
        print(f"run record {len(record):,} bytes, head {len(head):,} bytes (13 agents)")
        figures = {}
        for name, read in (
            ("record (get_run)", lambda: store.get_run(run.id)),
            ("head (run_head)", lambda: store.run_head(run.id)),
        ):
            await read()
            start_cpu, start = time.process_time(), time.perf_counter()
            for _ in range(READS):
                await read()
            cpu = (time.process_time() - start_cpu) / READS * 1e6
            wall = (time.perf_counter() - start) / READS * 1e6
            figures[name] = cpu
            print(f"{name:18} {wall:7.1f} µs wall, {cpu:7.1f} µs CPU per read")
        ratio = figures["record (get_run)"] / figures["head (run_head)"]
        print(f"reading the head costs 1/{ratio:.1f} of the record's CPU")
    finally:
        keys = [k async for k in redis.scan_iter(match=f"{prefix}:*")]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()


if __name__ == "__main__":
    asyncio.run(main())
