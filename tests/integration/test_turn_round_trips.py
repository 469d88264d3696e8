"""A turn's Redis round trips, counted on a real Redis (issue 25: four or fewer).

The store's client is wrapped so that everything it sends is counted: a command, a
script, a pipeline or transaction sent in one go, and each command a WATCHing
transaction sends on its own. A member turn runs through ``run_turn`` with the scripted
model and a recording scheduler (publishing the next turn is in-process: no round trip).
"""

from __future__ import annotations

from typing import Any

import pytest

from core.agent.turn import run_turn
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs.control import start_run
from core.scheduler import RecordingScheduler
from core.scheduler.base import TurnJob, TurnOutcome
from core.services import Services
from core.state.turn_start import HELD
from core.types import AgentSpec
from core.types.agent import AgentStatus
from core.types.run import RunStatus
from tests.conftest import make_settings

pytestmark = pytest.mark.integration

MAX_ROUND_TRIPS = 4


class RoundTrips:
    """Counts what ``client`` sends to Redis, naming each round trip, and what goes on the
    store's ``pipe`` (the turn's scripts, ``core.state.piped``): one each, as when each
    was sent alone (several in one write count as several)."""

    def __init__(self, client: Any, pipe: Any = None) -> None:
        self.sent: list[str] = []
        command, pipeline = client.execute_command, client.pipeline
        if pipe is not None:
            piped = pipe.execute

            async def execute(*args: Any, before: Any = ()) -> Any:
                # (a command ``before`` it, the save's staged state, goes in the same write,
                # its reply read with the script's: the same round trip)
                self.sent.append(str(args[0]))
                return await piped(*args, before=before)

            pipe.execute = execute

        async def execute_command(*args: Any, **options: Any) -> Any:
            self.sent.append(str(args[0]))
            return await command(*args, **options)

        def counted_pipeline(*args: Any, **kwargs: Any) -> Any:
            return self._pipeline(pipeline(*args, **kwargs))

        client.execute_command = execute_command
        client.pipeline = counted_pipeline

    def _pipeline(self, pipe: Any) -> Any:
        execute, immediate = pipe.execute, pipe.immediate_execute_command

        async def counted_execute(*args: Any, **kwargs: Any) -> Any:
            if pipe.command_stack or pipe.watching:
                names = ",".join(str(a[0]).split()[0] for a, _ in pipe.command_stack)
                self.sent.append(f"pipeline[{names}]")
            return await execute(*args, **kwargs)

        async def counted_immediate(*args: Any, **options: Any) -> Any:
            self.sent.append(f"watched {args[0]}")
            return await immediate(*args, **options)

        pipe.execute = counted_execute
        pipe.immediate_execute_command = counted_immediate
        return pipe

    def take(self) -> list[str]:
        sent, self.sent = self.sent, []
        return sent


async def _run(svc: Services, trips: RoundTrips, job: TurnJob) -> tuple[TurnOutcome, list[str]]:
    trips.take()
    outcome = await run_turn(svc, job)
    return outcome, trips.take()


async def _team(make_services: Any, real_redis: Any, member: tuple[Reply, ...]) -> Any:
    """A run whose root waits for a member it created; the member's replies scripted."""
    root_reply = Reply(
        calls=(
            call(
                "create_agent",
                {
                    "name": "M",
                    "role": "member",
                    "purpose": "count",
                    "tools": ["calculate", "send_message", "write_file"],
                },
            ),
            call("wait_for_messages"),
        )
    )
    model = ScriptedModel().script("O", root_reply).script("M", *member)
    svc = make_services(make_settings(), model, redis=real_redis, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    tools = (
        "create_agent",
        "wait_for_messages",
        "calculate",
        "send_message",
        "write_file",
        "finish",
    )
    root = AgentSpec(name="O", role="orchestrator", tools=tools)
    run_id = await start_run(svc, "count", root)
    assert await run_turn(svc, recorder.jobs[0]) is TurnOutcome.WAITING
    member_id = await svc.store.resolve_name(run_id, "M")
    assert member_id is not None
    # Warm: the scripts are loaded and the pool has its connection (not a turn's cost).
    assert await run_turn(svc, TurnJob(run_id=run_id, agent_id=root.id, seq=0)) is (
        TurnOutcome.DROPPED
    )
    return svc, recorder, run_id, root.id, member_id


async def test_a_tool_call_then_run_again_turn(make_services: Any, real_redis: Any) -> None:
    member = (Reply(calls=(call("calculate", {"expression": "6*7"}),)),)
    svc, recorder, run_id, _root_id, member_id = await _team(make_services, real_redis, member)
    trips = RoundTrips(real_redis, svc.store.pipe)

    outcome, sent = await _run(svc, trips, TurnJob(run_id=run_id, agent_id=member_id, seq=0))

    assert outcome is TurnOutcome.CONTINUED
    assert recorder.jobs[-1] == TurnJob(run_id=run_id, agent_id=member_id, seq=1)
    assert len(sent) <= MAX_ROUND_TRIPS, sent


async def test_a_finishing_turn_and_the_parent_it_wakes(
    make_services: Any, real_redis: Any
) -> None:
    member = (
        Reply(calls=(call("calculate", {"expression": "6*7"}),)),
        Reply(calls=(call("finish", {"result": "42"}),)),
    )
    svc, recorder, run_id, root_id, member_id = await _team(make_services, real_redis, member)
    assert await run_turn(svc, TurnJob(run_id=run_id, agent_id=member_id, seq=0)) is (
        TurnOutcome.CONTINUED
    )
    trips = RoundTrips(real_redis, svc.store.pipe)

    outcome, sent = await _run(svc, trips, TurnJob(run_id=run_id, agent_id=member_id, seq=1))

    assert outcome is TurnOutcome.ENDED
    assert recorder.jobs[-1] == TurnJob(run_id=run_id, agent_id=root_id, seq=1), "parent woken"
    assert len(sent) <= MAX_ROUND_TRIPS, sent
    state = await svc.store.load_agent(run_id, member_id)
    assert state is not None and state.status is AgentStatus.FINISHED

    # The root reads the result and finishes: the run ends with it (a run change).
    svc.llm.script("O", Reply(calls=(call("finish", {"result": "42"}),)))
    outcome, sent = await _run(svc, trips, TurnJob(run_id=run_id, agent_id=root_id, seq=1))

    assert outcome is TurnOutcome.ENDED
    assert (await svc.store.run_head(run_id)).status is RunStatus.COMPLETED
    # Its start read the run's record: the end is the save alone (was WATCH, read, save).
    assert len(sent) <= 2, sent


async def test_an_answer_is_kept_before_a_tool_with_effects(
    make_services: Any, real_redis: Any
) -> None:
    note = call("write_file", {"path": "notes.md", "content": "on it"})
    tell = call("send_message", {"to": "parent", "body": "on it"})
    member = (Reply(calls=(tell,)), Reply(calls=(note, tell)))
    svc, recorder, run_id, root_id, member_id = await _team(make_services, real_redis, member)
    trips = RoundTrips(real_redis, svc.store.pipe)

    outcome, sent = await _run(svc, trips, TurnJob(run_id=run_id, agent_id=member_id, seq=0))

    assert outcome is TurnOutcome.CONTINUED
    # The parent's wake-up and the member's next turn, claimed and recorded with the save.
    assert recorder.jobs[-2:] == [
        TurnJob(run_id=run_id, agent_id=root_id, seq=1),
        TurnJob(run_id=run_id, agent_id=member_id, seq=1),
    ]
    # A message is sent by the save itself: nothing to keep the answer for before it.
    assert "pipeline[HSET,EXPIRE,GET]" not in sent, sent
    assert len(sent) <= 2, sent

    outcome, sent = await _run(svc, trips, TurnJob(run_id=run_id, agent_id=member_id, seq=1))
    assert outcome is TurnOutcome.CONTINUED
    assert "pipeline[HSET,EXPIRE,GET]" in sent, "the answer kept before the file was written"
    assert len(sent) <= MAX_ROUND_TRIPS, sent


async def test_a_start_sent_again_after_its_reply_was_lost_holds_its_lease(
    make_services: Any, real_redis: Any
) -> None:
    member = (Reply(calls=(call("calculate", {"expression": "6*7"}),)),)
    svc, _recorder, run_id, _root_id, member_id = await _team(make_services, real_redis, member)
    store, lease = svc.store, ("token-1", 5000)

    first = await store.turn_start(run_id, member_id, 0, lease, 50)
    again = await store.turn_start(run_id, member_id, 0, lease, 50)  # redis-py's retry
    other = await store.turn_start(run_id, member_id, 0, ("token-2", 5000), 50)

    assert first is not None and first.reply.current
    assert again is not None and again.reply.current, "its own lease: not another's"
    assert other is None, "another delivery waits"


async def test_a_turn_that_creates_an_agent(make_services: Any, real_redis: Any) -> None:
    """create_agent checks the name, reads the run and takes a slot in one round trip."""
    helper = {"name": "H", "role": "member", "purpose": "help", "tools": ["calculate"]}
    model = ScriptedModel().script("O", *[Reply(calls=(call("create_agent", helper),))] * 2)
    svc = make_services(make_settings(), model, redis=real_redis, start=False)
    svc.scheduler = recorder = RecordingScheduler()
    tools = ("create_agent", "calculate", "finish")
    runs = []
    for _ in range(2):  # the first warms the scripts and the pool
        root = AgentSpec(name="O", role="orchestrator", tools=tools)
        runs.append((await start_run(svc, "help", root), root.id, recorder.jobs[-1]))
    trips = RoundTrips(real_redis, svc.store.pipe)
    await _run(svc, trips, runs[0][2])

    outcome, sent = await _run(svc, trips, runs[1][2])

    assert outcome is TurnOutcome.CONTINUED
    helper_id = await svc.store.resolve_name(runs[1][0], "H")
    assert helper_id is not None
    assert TurnJob(run_id=runs[1][0], agent_id=helper_id, seq=0) in recorder.jobs
    assert len(sent) <= MAX_ROUND_TRIPS, sent


async def test_a_message_to_an_agent_by_name(make_services: Any, real_redis: Any) -> None:
    """The name is resolved with the recipient's spec in one script, and not again for
    the next message to the same agent (what routing reads of an agent never changes)."""
    to_parent = Reply(calls=(call("send_message", {"to": "O", "body": "on it"}),))
    svc, _recorder, run_id, _root_id, member_id = await _team(
        make_services, real_redis, (to_parent, to_parent)
    )
    trips = RoundTrips(real_redis, svc.store.pipe)

    scripts = []
    for seq in (0, 1):
        job = TurnJob(run_id=run_id, agent_id=member_id, seq=seq)
        outcome, sent = await _run(svc, trips, job)
        assert outcome is TurnOutcome.CONTINUED, sent
        assert not {"SISMEMBER", "HGET", "HMGET"} & set(sent), "no lookup command by command"
        assert len(sent) <= MAX_ROUND_TRIPS, sent
        scripts.append(sent.count("EVALSHA"))
    assert scripts == [3, 2], "start, lookup, save; then start and save"


async def test_a_turn_starts_on_the_state_its_process_saved(
    make_services: Any, real_redis: Any
) -> None:
    """The start script does not send back the state this process's last save wrote (the
    save's token still in the agent's hash); another process, or a save by another since,
    gets the state itself."""
    sums = tuple(Reply(calls=(call("calculate", {"expression": f"{n}+1"}),)) for n in range(3))
    svc, _recorder, run_id, _root_id, member_id = await _team(make_services, real_redis, sums)
    assert await run_turn(svc, TurnJob(run_id=run_id, agent_id=member_id, seq=0)) is (
        TurnOutcome.CONTINUED
    )
    other = make_services(make_settings(), svc.llm, redis=real_redis, start=False)
    other.scheduler = RecordingScheduler()
    lease = ("a-look", 0)  # no lease taken: only looking

    mine = await svc.store.turn_start(run_id, member_id, 1, lease, 50)
    theirs = await other.store.turn_start(run_id, member_id, 1, lease, 50)

    assert mine is not None and theirs is not None
    assert mine.reply.state == HELD, "not sent back: this process saved it"
    assert theirs.reply.state not in (None, HELD)
    assert mine.state == theirs.state, "what is held is what was saved"

    # This process saves turn 1 (and holds its state), then another saves turn 2: the
    # state held here is not used.
    assert await run_turn(svc, TurnJob(run_id=run_id, agent_id=member_id, seq=1)) is (
        TurnOutcome.CONTINUED
    )
    assert await run_turn(other, TurnJob(run_id=run_id, agent_id=member_id, seq=2)) is (
        TurnOutcome.CONTINUED
    )
    after = await svc.store.turn_start(run_id, member_id, 3, lease, 50)
    assert after is not None and after.state is not None
    assert after.reply.state != HELD, "a save by another process came since"
    assert after.state.seq == 3
