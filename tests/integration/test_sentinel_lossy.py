"""A lossy failover (Sentinel, ``redis.replicas_to_ack`` = 0): the primary dies with writes
no replica received, and the turns go on from what the new primary has.

Seen under ``kill_primary_losing`` (bench/chaos.py's harness): an Orchestrator quarantined
as "turn 1 was delivered 21 times without being saved" within a second, no worker dead,
its members' results never read (lost messages). Its turn 1 had read the results and asked
the call keeper on the old primary; the keeper's answer was saved on the new one, where
turn 0 and the results were lost. Once they were redone, turn 1 found an answer saved and
no mail pending, read no new mail, slept, and was woken again at once for the mail still
there — each wake-up a delivery that did not save. The start script now reads new mail
when nothing is pending, saved answer or not (the answer is reused only for the same
request). And a copy of a turn the agent has not reached (a later turn's job outliving a
lost save) is not counted against that turn. A turn really delivered
``limits.max_crashes`` + 1 times is still quarantined.

On loopback: a primary, a replica and three Sentinels (tests/integration/sentinel_cluster.py),
the turns run here on a client that follows the Sentinels. No time is waited for but the
failover's own: the writes to lose are made between ``cut_replicas`` and
``kill_cut_primary``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from redis import Redis as SyncRedis

from core.agent.turn import run_turn
from core.agent.wake import wake_agent
from core.llm.base import LLMRequest, LLMResponse
from core.llm.scripted import Reply, ScriptedModel, call
from core.process.wiring import connect_redis
from core.runs import control, people, watchdog
from core.runs.approval import Approve
from core.runs.control import approve_run, propose_run, start_run
from core.scheduler import RecordingScheduler
from core.scheduler.base import TurnJob, TurnOutcome
from core.types import AgentSpec
from core.types.agent import EndReason
from core.types.events import RunFinished
from core.types.messages import TextMessage
from core.types.people import Person
from core.types.run import RunStatus
from tests.conftest import REDIS_URL, make_settings
from tests.integration import test_sentinel_failover
from tests.integration.sentinel_cluster import SentinelCluster

pytestmark = pytest.mark.integration

cluster = test_sentinel_failover.cluster

# Small, so the test is short: the copies it delivers outnumber it.
MAX_CRASHES = 2


def _replicated(cluster: SentinelCluster) -> None:
    """Until the replicas have every write made so far (a write and WAIT on one
    connection to the primary: replication is ordered)."""
    primary = SyncRedis(host="127.0.0.1", port=cluster.primary.port)
    try:
        primary.set("lossy:synced", "1")
        assert primary.execute_command("WAIT", len(cluster.copies), 10_000) == len(cluster.copies)
    finally:
        primary.close()


def _calculating(n: int) -> Reply:
    return Reply(calls=(call("calculate", {"expression": f"{n}+1"}),))


def _services(make_services: Any, model: ScriptedModel, url: str, redis: Any = None) -> Any:
    settings = make_settings(
        redis={"url": url, "key_prefix": "lossy"},
        limits={"max_crashes": MAX_CRASHES, "max_deliveries": 2},
    )
    svc = make_services(settings, model, redis=redis or connect_redis(settings), start=False)
    svc.scheduler = RecordingScheduler()
    return svc


async def test_copies_of_the_turn_after_a_lost_save_do_not_quarantine_it(
    cluster: SentinelCluster, make_services: Any
) -> None:
    model = ScriptedModel().script("*", *(_calculating(n) for n in range(4)))
    svc = _services(make_services, model, cluster.url)
    recorder: RecordingScheduler = svc.scheduler
    spec = AgentSpec(name="Beta", tools=("calculate", "finish"))
    run_id = await start_run(svc, "count", spec)
    assert await run_turn(svc, recorder.pop()) is TurnOutcome.CONTINUED  # turn 0
    await asyncio.to_thread(_replicated, cluster)

    # Turn 1 is saved on the primary alone, which then dies: the save is lost.
    await asyncio.to_thread(cluster.cut_replicas)
    turn_1 = recorder.pop()
    assert await run_turn(svc, turn_1) is TurnOutcome.CONTINUED
    turn_2 = recorder.pop()
    assert turn_2.seq == 2
    await asyncio.to_thread(cluster.kill_cut_primary)
    await asyncio.to_thread(cluster.wait_for_failover)
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and state.seq == 1, "the failover did not lose turn 1's save"

    # Copies of turn 2 (the broker's, the ledger's, a chain's) reach the new primary while
    # the agent is at turn 1: each is dropped, more of them than the quarantine allows.
    for _ in range(MAX_CRASHES + 2):
        assert await run_turn(svc, turn_2) is TurnOutcome.DROPPED
    # Turn 1 is redone (the ledger or the watchdog publishes it again), then turn 2 runs.
    assert await run_turn(svc, turn_1) is TurnOutcome.CONTINUED
    ran = await run_turn(svc, turn_2)
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and state.end_reason is None, state.end_detail
    assert ran is TurnOutcome.CONTINUED and state.seq == 3
    # Turn 1 asked the model twice (its first answer was lost with the save), turn 2 once.
    assert len(model.requests) == 4


async def test_a_turn_delivered_more_than_max_crashes_times_is_still_quarantined(
    real_redis: Any, make_services: Any
) -> None:
    """The current turn's deliveries whose worker died (started, never saved) still count,
    through the start script (no failover needed: the test Redis)."""
    svc = _services(make_services, ScriptedModel(), REDIS_URL, real_redis)
    recorder: RecordingScheduler = svc.scheduler
    spec = AgentSpec(name="Beta", tools=("calculate", "finish"))
    run_id = await start_run(svc, "count", spec)
    job: TurnJob = recorder.pop()
    drain_max = svc.settings.bus.drain_max
    for _ in range(MAX_CRASHES):  # each started the turn (its lease lapses) and died
        started = await svc.store.turn_start(run_id, spec.id, job.seq, ("", 0), drain_max)
        assert started is not None and started.reply.current
    assert await run_turn(svc, job) is TurnOutcome.ENDED
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and state.end_reason is EndReason.QUARANTINED
    assert f"died under it {MAX_CRASHES} times" in state.end_detail, state.end_detail


class _FailingOverModel(ScriptedModel):
    """Answers the mail with a post to the chat (a tool with effects: the answer is kept
    before it runs), waits otherwise; the first time it is asked about the mail, the cut
    primary dies and the answer comes once the new primary answers — as a call keeper's
    answer that outlived the failover."""

    def __init__(self, cluster: SentinelCluster) -> None:
        super().__init__(responder=self._reply)
        self.cluster = cluster
        self.failed_over = False

    @staticmethod
    def _reply(request: LLMRequest) -> Reply:
        if any(MAIL in (m.content or "") for m in request.messages):
            return Reply(calls=(call("post_to_chat", {"text": "read it"}),))
        return Reply(calls=(call("wait_for_messages", {}),))

    async def complete(self, request: LLMRequest) -> LLMResponse:
        if not self.failed_over and any(MAIL in (m.content or "") for m in request.messages):
            self.failed_over = True
            await asyncio.to_thread(self.cluster.kill_cut_primary)
            await asyncio.to_thread(self.cluster.wait_for_failover)
        return await super().complete(request)


MAIL = "the figures are in"


async def _mail(svc: Any, run_id: str, agent_id: str) -> None:
    """A message for the agent, and its wake-up (a person's, or a redone sender's)."""
    await svc.bus.deliver(
        run_id, TextMessage(run_id=run_id, sender="u1", recipient=agent_id, body=MAIL)
    )
    assert await wake_agent(svc, run_id, agent_id)


async def test_an_answer_saved_for_mail_the_failover_lost_does_not_hide_new_mail(
    cluster: SentinelCluster, make_services: Any
) -> None:
    """What was seen: the Orchestrator's turn 1 read its members' results and asked the
    call keeper, on the old primary; the keeper's answer was saved on the new one, where
    the Orchestrator was back at turn 0 and the results unsent. Turn 0 redone and the
    results sent again, turn 1 found an answer saved and nothing pending, so it read no
    new mail ("woken with nothing to read"), went back to sleep and woke at once (the mail
    was there): 21 deliveries in a fraction of a second, then quarantined, the results
    never read."""
    model = _FailingOverModel(cluster)
    svc = _services(make_services, model, cluster.url)
    recorder: RecordingScheduler = svc.scheduler
    spec = AgentSpec(name="Lead", team_id="core", tools=("post_to_chat", "wait_for_messages"))
    run_id = await start_run(svc, "wait for the figures", spec)
    turn_0 = recorder.pop()
    await asyncio.to_thread(_replicated, cluster)

    # On the old primary alone: turn 0 (the agent waits), the mail, turn 1 reading it —
    # whose model answer is saved once the new primary answers.
    await asyncio.to_thread(cluster.cut_replicas)
    assert await run_turn(svc, turn_0) is TurnOutcome.WAITING
    await _mail(svc, run_id, spec.id)
    assert await run_turn(svc, recorder.pop()) is TurnOutcome.DROPPED  # its save: stale
    assert model.failed_over
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and state.seq == 0, "the failover did not lose turn 0's save"
    keys = svc.store.keys  # turn 1's answer, kept before its tool ran: on the new primary
    assert await svc.store.redis.hget(keys.responses(run_id), keys.response_field(spec.id, 1))

    # Turn 0 redone, the mail sent again: turn 1 reads it at its first delivery (before:
    # each delivery dropped, woken again, until quarantined).
    assert await run_turn(svc, turn_0) is TurnOutcome.WAITING
    await _mail(svc, run_id, spec.id)
    outcomes = []
    for _ in range(MAX_CRASHES + 1):
        outcomes.append(await run_turn(svc, recorder.pop()))
        if outcomes[-1] is not TurnOutcome.DROPPED:
            break
    state = await svc.store.load_agent(run_id, spec.id)
    assert state is not None and state.end_reason is None, (outcomes, state.end_detail)
    assert outcomes == [TurnOutcome.CONTINUED], outcomes
    assert any(MAIL in (m.content or "") for m in state.thread)
    assert not await svc.bus.has_unread(run_id, state.spec)


async def test_a_turn_of_a_run_whose_creation_was_lost_is_dropped_once(
    cluster: SentinelCluster, make_services: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The run created and approved on the old primary alone, its first turn's job on the
    new one (published after the failover). Before, the turn raised reading the run
    ("unknown run"), was retried with back-off and given up, its copies given up again
    and again (seen: 36 give-ups of one turn in 85 s). Now it is dropped at once, said
    in one line, and leaves nothing behind."""
    svc = _services(make_services, ScriptedModel(), cluster.url)
    recorder: RecordingScheduler = svc.scheduler
    spec = AgentSpec(name="Lost", tools=("calculate", "finish"))
    await asyncio.to_thread(cluster.cut_replicas)
    run_id = await start_run(svc, "never seen", spec)
    job = recorder.pop()
    await asyncio.to_thread(cluster.kill_cut_primary)
    await asyncio.to_thread(cluster.wait_for_failover)
    assert not await svc.store.redis.exists(svc.store.keys.run(run_id)), "creation kept"

    for _ in range(2):  # the job, and a copy of it (the ledger's)
        assert await run_turn(svc, job) is TurnOutcome.DROPPED
    said = [r.getMessage() for r in caplog.records if "no such agent" in r.getMessage()]
    assert len(said) == 2 and "a Redis failover lost its creation" in said[0], said
    assert await svc.store.redis.keys(f"{svc.store.keys.prefix}:run:{run_id}:*") == []


async def test_a_run_whose_agents_the_failover_lost_is_ended_by_the_watchdog(
    cluster: SentinelCluster, make_services: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What was seen (bench/failover_lossy.py): a run whose approval outlived the failover
    and whose agents' creation did not stayed ``running`` with no agent for 78 s and more.
    The proposal's expiry timer, taken back after the approval, came back with the lost
    writes; the watchdog took it for "a timer will wake someone" and let the run be until
    the proposal's expiry (``approval.expire_s``, a day). Now it ends the run, named."""
    settings = make_settings(
        redis={"url": cluster.url, "key_prefix": "lossy"}, scheduler={"watchdog_s": 0.5}
    )
    svc = make_services(settings, ScriptedModel(), redis=connect_redis(settings), start=False)
    svc.scheduler = RecordingScheduler()
    spec = AgentSpec(name="Gone", tools=("calculate", "finish"))
    run_id = await propose_run(svc, "lost agents", spec, requested_by="u1")
    decided = control._decided

    async def cut_then_decided(svc: Any, run_id: str) -> None:
        # The approval is on the replica; what follows it (the expiry taken back, the
        # agents created) on the old primary alone.
        await asyncio.to_thread(_replicated, cluster)
        await asyncio.to_thread(cluster.cut_replicas)
        await decided(svc, run_id)

    monkeypatch.setattr(control, "_decided", cut_then_decided)
    assert (await approve_run(svc, run_id, "u1")).ok
    await asyncio.to_thread(cluster.kill_cut_primary)
    await asyncio.to_thread(cluster.wait_for_failover)
    head = await svc.store.run_head(run_id)
    assert head.status is RunStatus.RUNNING and await svc.store.agent_ids(run_id) == []
    assert await svc.store.timers.soonest() is not None, "the expiry's removal was kept"

    # Rounds of the watchdog as the background loop calls them (one per watchdog_s):
    # the second finds the run idle again and ends it.
    for _ in range(60):
        await watchdog.watch(svc)
        if (await svc.store.run_head(run_id)).status.terminal:
            break
        await asyncio.sleep(0.25)
    run = await svc.store.get_run(run_id)
    assert run.status is RunStatus.FAILED, run.status
    ends = [e for _, e in await svc.store.read_events(run_id) if isinstance(e, RunFinished)]
    assert len(ends) == 1 and ends[0].status is RunStatus.FAILED  # the chat's relay reads it
    assert ends[0].error and "no agent is left to finish it" in ends[0].error, ends[0].error
    assert run_id not in await svc.store.watchdog.active_runs(100)


async def test_a_proposal_whose_approval_the_failover_lost_can_be_approved_again(
    cluster: SentinelCluster, make_services: Any
) -> None:
    """An approval (``redis.replicas_to_ack`` = 0) made on the old primary alone: the new
    one has the run still proposed, with its expiry. The person who clicked was told
    "Approved" (and the card redrawn so, if the redraw reached the platform before the
    failover); approving again starts it, once."""
    svc = _services(make_services, ScriptedModel(), cluster.url)
    recorder: RecordingScheduler = svc.scheduler
    spec = AgentSpec(name="Again", tools=("calculate", "finish"))
    run_id = await propose_run(svc, "approve me", spec, requested_by="u1")
    await asyncio.to_thread(_replicated, cluster)
    await asyncio.to_thread(cluster.cut_replicas)
    first = await people.decide(svc, run_id, Person("u1", "Ann"), Approve())
    assert isinstance(first, people.Done) and first.run.status is RunStatus.RUNNING
    await asyncio.to_thread(cluster.kill_cut_primary)
    await asyncio.to_thread(cluster.wait_for_failover)
    assert (await svc.store.run_head(run_id)).status is RunStatus.PROPOSED, "approval kept"

    again = await people.decide(svc, run_id, Person("u1", "Ann"), Approve())
    assert isinstance(again, people.Done), again
    assert (await svc.store.run_head(run_id)).status is RunStatus.RUNNING
    assert await svc.store.agent_ids(run_id) == [spec.id]
    # Its first turn submitted by each approval (the first's job is a copy: dropped or run
    # once, by the turn's seq).
    assert [(j.agent_id, j.seq) for j in recorder.jobs] == [(spec.id, 0), (spec.id, 0)]
    assert await svc.store.timers.soonest() is None, "the expiry is taken back"
