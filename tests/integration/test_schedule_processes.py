"""Two real worker processes fire the same schedules at the same (fake) moment (issue
28): every slot is fired exactly once between them (a claim per schedule and slot in
Redis), and a slot missed by both while they were "down" is made up once."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import pytest

from core.config import PROJECT_ROOT, load_settings
from core.llm.scripted import ScriptedModel
from core.process.wiring import build_services
from core.runs import firings
from core.runs import schedules as people
from core.scheduler.recording import RecordingScheduler
from core.schedules.clock import FakeClock
from core.services import Services
from core.types.people import Person
from core.types.place import Place
from core.types.run import RunStatus
from core.types.schedules import Scheduled
from tests.conftest import REDIS_URL
from tests.integration.processes import unique_prefix, worker_env

pytestmark = pytest.mark.integration
MONDAY_8 = 1764576000.0  # Monday 1 December 2025, 08:00 UTC
SCHEDULES = 25
# One worker: waits for the go signal, then fires what is due at the fake time, 3 times.
WORKER = textwrap.dedent(
    """
    import asyncio, sys
    from core.config import load_settings
    from core.llm.scripted import ScriptedModel
    from core.process.wiring import build_services
    from core.runs import firings
    from core.scheduler.recording import RecordingScheduler
    from core.schedules.clock import FakeClock

    async def main(at: float) -> None:
        svc = build_services(load_settings(), RecordingScheduler(), llm=ScriptedModel())
        go = svc.store.keys.prefix + ":test-go"
        while not await svc.store.redis.exists(go):
            await asyncio.sleep(0.005)
        fired = 0
        for _ in range(3):
            fired += await firings.fire_due(svc, FakeClock(at))
        print("FIRED", fired, flush=True)
        await svc.aclose()

    asyncio.run(main(float(sys.argv[1])))
    """
)


def _workers(env: dict[str, str], at: float) -> list[subprocess.Popen[str]]:
    return [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(at)],
            env=env,
            cwd=PROJECT_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]


async def _race(svc: Services, env: dict[str, str], at: float) -> list[int]:
    go = svc.store.keys.prefix + ":test-go"
    await svc.store.redis.delete(go)
    procs = _workers(env, at)
    await asyncio.sleep(1.5)  # both started and waiting
    await svc.store.redis.set(go, "1")
    counts = []
    for p in procs:
        out, _ = await asyncio.to_thread(p.communicate, timeout=60)
        assert p.returncode == 0, out
        counts.append(int(out.split("FIRED", 1)[1].split()[0]))
    return counts


async def test_two_processes_fire_each_slot_once() -> None:
    with unique_prefix() as prefix:
        env = worker_env(redis__url=REDIS_URL, redis__key_prefix=prefix)
        settings = load_settings(
            redis={"url": REDIS_URL, "key_prefix": prefix}, schedules={"max_per_channel": 100}
        )
        svc = build_services(settings, RecordingScheduler(), llm=ScriptedModel())
        try:
            ana, clock = Person("UANA", "Ana"), FakeClock(MONDAY_8)
            ops = Place(platform="slack", workspace="T1", channel="C1", channel_name="#ops")
            for i in range(SCHEDULES):
                made = await people.schedule(
                    svc, ana, ops, task=f"Report {i}", when="every day at 9:00", clock=clock
                )
                assert isinstance(made, Scheduled)
            counts = await _race(svc, env, MONDAY_8 + 3600)
            assert sum(counts) == SCHEDULES, counts
            got = [f for _, f in await firings.read_firings(svc, "0-0")]
            assert len(got) == SCHEDULES == len({f.schedule_id for f in got})
            assert len({f.run_id for f in got}) == SCHEDULES

            # Both down over the next slot and ten minutes past it: each schedule once.
            # (Their first runs still wait for approval: ended here so no slot is skipped.)
            for f in got:
                await svc.store.transition_run(f.run_id, RunStatus.CANCELLED, by="UANA")
            counts = await _race(svc, env, MONDAY_8 + 3600 + 86400 + 600)
            assert sum(counts) == SCHEDULES, counts
            assert len(await firings.read_firings(svc, "0-0")) == 2 * SCHEDULES
            for s in (await people.listed(svc, ops)).schedules:
                assert s.firings == 2 and s.next_at == MONDAY_8 + 3600 + 2 * 86400
        finally:
            await svc.aclose()
