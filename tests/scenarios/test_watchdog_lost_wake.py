"""A wake-up claimed by a save whose turn was then lost (a Redis failover kept the save and
lost the turn's publishing, written after it; the worker went on and settled its own turn
on the new primary, so no late copy redoes the follow-ups): the watchdog submits the woken
turn again once the run made no progress for the stall span, past the claim, which alone
would hold every wake-up back for ``bus.wake_ttl_s``."""

from __future__ import annotations

import asyncio

from core.llm.scripted import Reply, ScriptedModel, call
from core.runs import watchdog
from core.runs.control import start_run
from core.scheduler.base import TurnJob
from core.types import AgentSpec
from core.types.agent import AgentStatus
from core.types.events import RunFinished
from core.types.run import RunStatus
from tests.conftest import make_settings
from tests.helpers import collect
from tests.scenarios import texts

TOOLS = ("create_agent", "send_message", "wait_for_messages", "finish")


def _model() -> ScriptedModel:
    """O creates A and waits; A sends O a message and waits; O, woken, finishes."""
    return (
        ScriptedModel()
        .script(
            "O",
            Reply(
                calls=(
                    call("create_agent", {"name": "A", "role": "member", "purpose": "report"}),
                    call("wait_for_messages"),
                )
            ),
            Reply(calls=(call("finish", {"result": "heard from A"}),)),
        )
        .script(
            "A",
            Reply(
                calls=(
                    call("send_message", {"to": "O", "body": "report: 42"}),
                    call("wait_for_messages"),
                )
            ),
        )
    )


async def test_a_wake_up_claimed_and_lost_is_submitted_again_once_the_run_stalls(
    make_services, any_redis, caplog
) -> None:
    settings = make_settings(
        scheduler={"stall_period_s": 0.15, "stall_periods": 2}, bus={"wake_ttl_s": 3600}
    )
    model = _model()
    svc = make_services(settings, model, redis=any_redis)
    inline = svc.scheduler
    root = AgentSpec(name="O", role="orchestrator", tools=TOOLS)
    lost: list[TurnJob] = []

    class LosesTheWake:
        """Loses O's wake-up, submitted after A's save claimed it."""

        async def submit(self, job: TurnJob) -> None:
            if job.agent_id == root.id and job.seq == 1 and not lost:
                lost.append(job)
                return
            await inline.submit(job)

    svc.scheduler = LosesTheWake()
    run_id = await start_run(svc, "t", root)
    for _ in range(250):  # O's wake-up lost, A waiting
        agents = [await svc.store.load_agent(run_id, a) for a in await svc.store.agent_ids(run_id)]
        if lost and len(agents) == 2 and all(a and a.status.waiting for a in agents):
            break
        await asyncio.sleep(0.02)
    assert lost == [TurnJob(run_id=run_id, agent_id=root.id, seq=1)]
    # The claim stands: a wake-up through it (the watchdog's, a timer's) does nothing.
    assert await svc.redis.get(svc.store.keys.wake(run_id, root.id)) == "1"
    assert await svc.bus.claim_wake(run_id, root.id) is None
    await asyncio.sleep(0.35)  # > stall_periods × stall_period_s with no event

    # A delivery holding the turn's lease (a slow start): nothing is submitted.
    lease = svc.store.keys.turn_lease(run_id, root.id, 1)
    await svc.redis.set(lease, "someone", px=5000)
    assert not await watchdog.check(svc, run_id)
    await svc.redis.delete(lease)
    assert (await svc.store.load_agent(run_id, root.id)).status is AgentStatus.WAITING

    with caplog.at_level("WARNING", logger="core.runs.watchdog"):
        assert not await watchdog.check(svc, run_id), "woken, never failed"
    events = await collect(svc, run_id)
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status is RunStatus.COMPLETED
    assert finished.result == "heard from A"
    o_requests = [r for r in model.requests if r.agent_name == "O"]
    assert len(o_requests) == 2 and any("report: 42" in t for t in texts(o_requests[1], ""))
    warned = [r.getMessage() for r in caplog.records if "made no progress" in r.getMessage()]
    assert len(warned) == 1 and "agent O " in warned[0], warned
    assert await svc.redis.get(svc.store.keys.wake(run_id, root.id)) is None
