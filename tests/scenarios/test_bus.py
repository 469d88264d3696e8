"""The message bus end to end: routing through the send_message tool, delivery before an
agent is ready, redelivery after a crash and dead-lettering, exactly-once processing under
load, caps on creating agents, and one wake-up for a burst of messages."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from core.agent.context import ToolContext
from core.agent.create import new_agent_state
from core.agent.turn import run_turn
from core.llm.base import LLMRequest, LLMResponse
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs.control import start_run
from core.scheduler import RecordingScheduler
from core.scheduler.base import TurnJob, TurnOutcome
from core.services import Services
from core.state.bus import Bus
from core.state.routing import Route
from core.types import AgentSpec
from core.types.agent import AgentState, AgentStatus, EndReason
from core.types.chat import ToolCall
from core.types.events import AgentCreated, AgentFinished, ErrorRaised, RunFinished, ToolCalled
from core.types.messages import BUS_MESSAGE, TextMessage
from core.types.run import RunStatus
from tests.conftest import make_settings
from tests.helpers import SlowModel, collect
from tests.scenarios import ORCHESTRATOR_TOOLS, calls_made, texts

BASE_TOOLS = ("send_message", "roster", "wait_for_messages", "finish")


def _by_hand(
    make_services: Callable[..., Services], settings: Any, llm: Any, redis: Any
) -> tuple[Services, RecordingScheduler]:
    svc = make_services(settings, llm, redis=redis, start=False)
    recorder = RecordingScheduler()
    svc.scheduler = recorder
    return svc, recorder


def _orchestrator(name: str = "Orchestrator") -> AgentSpec:
    return AgentSpec(name=name, role="orchestrator", tools=ORCHESTRATOR_TOOLS)


async def _add_agent(
    svc: Services,
    run_id: str,
    spec: AgentSpec,
    *,
    depth: int = 1,
    status: AgentStatus | None = None,
) -> AgentState:
    """Create an agent (state, name, consumer groups) without scheduling a turn."""
    run = await svc.store.get_run(run_id)
    state = new_agent_state(
        svc,
        run_id,
        spec,
        task=run.task,
        requester=run.requested_by,
        brief=f"Brief for {spec.name}.",
        depth=depth,
    )
    if status is not None:
        state.status = status
    await svc.redis.sadd(svc.store.keys.agent_slots(run_id), spec.id)
    await svc.store.create_agent(state, [], svc.bus.register_writes(run_id, spec))
    return state


async def _deliver(svc: Services, run_id: str, sender: str, recipient: str, body: str) -> str:
    """Send a direct message the way a turn does: its write in a transaction."""
    message = TextMessage(run_id=run_id, sender=sender, recipient=recipient, body=body)
    out = await svc.bus.outgoing(run_id, Route("agent", recipient), message)
    async with svc.redis.pipeline(transaction=True) as pipe:
        for write in svc.bus.send_writes([out]):
            write(pipe)
        await pipe.execute()
    return message.id


async def _pending(svc: Services, stream: str, group: str) -> int:
    info: Any = await svc.redis.xpending(stream, group)
    return int(info["pending"])


def _incoming(thread: Any, prefix: str = "[Message from") -> list[str]:
    return [
        m.content or "" for m in thread if m.role == "user" and (m.content or "").startswith(prefix)
    ]


# --- 1. the routing matrix, through the send_message tool --------------------------------

NAMES = {
    "O": "Orchestrator",
    "LA": "Lead A",
    "LB": "Lead B",
    "A1": "Analyst A1",
    "A2": "Analyst A2",
    "B1": "Analyst B1",
    "J": "Judge",
}
TEAMS = {"A": ("LA", "A1", "A2"), "B": ("LB", "B1")}
PARENTS = {"LA": "O", "LB": "O", "A1": "LA", "A2": "LA", "B1": "LB", "J": "O"}
COLUMNS = ("O", "LA", "LB", "A1", "A2", "B1", "J", "parent", "team", "all", "Nobody")

# What each sender (row) gets for each recipient (column); agents are addressed both by
# name and by id. ok = sent; me = to itself; x = not parent/child/teammate; np = no
# parent; nt = no team; nb = only the root broadcasts; ? = no such agent.
MATRIX: dict[str, str] = {
    #      O   LA  LB  A1  A2  B1  J   parent team all Nobody
    "O": " me  ok  ok  x   x   x   ok  np     nt   ok  ?",
    "LA": "ok  me  x   ok  ok  x   x   ok     ok   nb  ?",
    "LB": "ok  x   me  x   x   ok  x   ok     ok   nb  ?",
    "A1": "x   ok  x   me  ok  x   x   ok     ok   nb  ?",
    "A2": "x   ok  x   ok  me  x   x   ok     ok   nb  ?",
    "B1": "x   x   ok  x   x   me  x   ok     ok   nb  ?",
    "J": " ok  x   x   x   x   x   me  ok     nt   nb  ?",
}
REFUSALS = {
    "me": ("You cannot message yourself.",),
    "x": ("is not your parent, your child or on your team", "reach them through"),
    "np": ("You have no parent",),
    "nt": ("You are not on a team.",),
    "nb": ("Only the orchestrator may broadcast",),
    "?": ('There is no agent "',),
}


def _matrix_cases() -> list[Any]:
    cases = []
    for sender, row in MATRIX.items():
        codes = row.split()
        assert len(codes) == len(COLUMNS), sender
        for column, code in zip(COLUMNS, codes, strict=True):
            ways = ("name", "id") if column in NAMES else ("word",)
            for way in ways:
                suffix = f"-by-{way}" if way != "word" else ""
                cases.append(
                    pytest.param(sender, column, way, code, id=f"{sender}->{column}{suffix}")
                )
    return cases


async def _routing_tree(svc: Services) -> tuple[str, dict[str, AgentSpec]]:
    root = _orchestrator(NAMES["O"])
    run_id = await start_run(svc, "route some messages", root)
    specs = {"O": root}
    team_of = {label: team for team, labels in TEAMS.items() for label in labels}
    roles = {"LA": "lead", "LB": "lead", "A1": "member", "A2": "member", "B1": "member"}
    for label in ("LA", "LB", "A1", "A2", "B1", "J"):
        spec = AgentSpec(
            name=NAMES[label],
            role=roles.get(label, "judge"),
            parent_id=specs[PARENTS[label]].id,
            team_id=f"team-{team_of[label].lower()}" if label in team_of else None,
            tools=BASE_TOOLS,
        )
        specs[label] = spec
        await _add_agent(svc, run_id, spec, depth=1 if PARENTS[label] == "O" else 2)
    return run_id, specs


@pytest.mark.parametrize(("sender", "column", "way", "code"), _matrix_cases())
async def test_routing_matrix(
    settings, make_services, any_redis, sender: str, column: str, way: str, code: str
) -> None:
    svc, _ = _by_hand(make_services, settings, ScriptedModel(), any_redis)
    run_id, specs = await _routing_tree(svc)
    me = specs[sender]
    state = await svc.store.load_agent(run_id, me.id)
    assert state is not None
    to = {"name": NAMES.get(column), "id": specs[column].id if column in specs else None}.get(
        way, column
    )
    assert to is not None
    ctx = ToolContext(services=svc, state=state)
    body = f"hello from {sender} to {column}"
    result = await svc.tools.execute(
        ctx,
        ToolCall(id="call_1", name="send_message", arguments=json.dumps({"to": to, "body": body})),
        list(me.tools),
        svc.prompts,
        8000,
    )

    keys = svc.store.keys
    if code != "ok":
        assert not result.ok, result.content
        assert ctx.outbox == []
        assert result.content.startswith("Message not sent: ")
        for phrase in (*REFUSALS[code], "You may address:"):
            assert phrase in result.content, (phrase, result.content)
        # Where it may write instead is spelled out for this sender.
        assert ('"parent"' in result.content) == (me.parent_id is not None)
        assert ('"team"' in result.content) == (me.team_id is not None)
        assert ('"all"' in result.content) == (me.parent_id is None)
        if code == "x":
            via = "your parent" if me.parent_id else "the lead of their team"
            assert f"reach them through {via}." in result.content
            other = specs[column]
            assert result.content.startswith(
                f"Message not sent: {other.name} is not your parent, your child or on your "
                f"team (their team: {other.team_id or 'none'})"
            )
        return

    assert result.ok, result.content
    assert result.content == f"Message queued for {to}; it is delivered when this turn ends."
    [out] = ctx.outbox
    everyone = {s.id for s in specs.values()}
    if column == "team":
        assert me.team_id is not None
        team = next(t for t, labels in TEAMS.items() if sender in labels)
        stream = keys.team(run_id, me.team_id)
        recipients = tuple(sorted(specs[t].id for t in TEAMS[team] if t != sender))
        address = f"team:{me.team_id}"
    elif column == "all":
        stream = keys.broadcast(run_id)
        recipients = tuple(sorted(everyone - {me.id}))
        address = "all:all"
    else:
        target = specs[PARENTS[sender]] if column == "parent" else specs[column]
        stream = keys.inbox(run_id, target.id)
        recipients = (target.id,)
        address = target.id
    assert out.stream == stream
    assert tuple(sorted(out.recipients)) == recipients
    assert out.message.sender == me.id
    assert out.message.recipient == address
    assert out.message.body == body
    # Nothing is written before the turn is saved.
    assert await svc.redis.xlen(stream) == 0


def test_routing_matrix_is_what_the_rules_say() -> None:
    """The table above, derived from the rules in words (a check on the table itself)."""
    team_of = {label: team for team, labels in TEAMS.items() for label in labels}
    for sender, row in MATRIX.items():
        codes = dict(zip(COLUMNS, row.split(), strict=True))
        for other in NAMES:
            related = (
                PARENTS.get(sender) == other
                or PARENTS.get(other) == sender
                or (sender in team_of and team_of.get(other) == team_of[sender])
            )
            expected = "me" if other == sender else "ok" if related else "x"
            assert codes[other] == expected, (sender, other)
        assert codes["parent"] == ("ok" if sender in PARENTS else "np")
        assert codes["team"] == ("ok" if sender in team_of else "nt")
        assert codes["all"] == ("nb" if sender in PARENTS else "ok")


# --- 2. a message sent before its recipient is ready -------------------------------------


@pytest.mark.parametrize(
    "status", [AgentStatus.INITIALIZING, AgentStatus.READY], ids=["initializing", "ready"]
)
async def test_message_sent_before_the_recipient_is_ready_is_delivered(
    settings, make_services, any_redis, status: AgentStatus
) -> None:
    """A message that reaches an agent before its first turn (still initialising, or
    ready but not yet run) is in that first turn, once, as the latest message."""
    model = ScriptedModel().script(
        "Orchestrator",
        Reply(calls=(call("send_message", {"to": "Latecomer", "body": "early-bird-7"}),)),
    )
    svc, recorder = _by_hand(make_services, settings, model, any_redis)
    root = _orchestrator()
    run_id = await start_run(svc, "t", root)
    [root_job] = recorder.jobs
    late = AgentSpec(name="Latecomer", role="judge", parent_id=root.id, tools=BASE_TOOLS)
    await _add_agent(svc, run_id, late, status=status)

    assert await run_turn(svc, root_job) is TurnOutcome.CONTINUED
    assert recorder.of(late.id) == []  # not waiting, so not woken: its first turn will read it
    inbox = svc.store.keys.inbox(run_id, late.id)
    assert await svc.redis.xlen(inbox) == 1

    model.script("Latecomer", Reply(calls=(call("wait_for_messages"),)))
    first = TurnJob(run_id=run_id, agent_id=late.id, seq=0)
    assert await run_turn(svc, first) is TurnOutcome.WAITING

    expected = "[Message from Orchestrator (orchestrator) to you]\nearly-bird-7"
    state = await svc.store.load_agent(run_id, late.id)
    assert state is not None and _incoming(state.thread) == [expected]
    [request] = [r for r in model.requests if r.agent_name == "Latecomer"]
    assert _incoming(request.messages) == [expected]
    assert sum("early-bird-7" in (m.content or "") for m in request.messages) == 1
    assert request.messages[-1].content == expected
    assert await _pending(svc, inbox, late.id) == 0
    assert not await svc.bus.has_unread(run_id, late)


# --- 3. a crash after the LLM call: redelivered, processed once; then dead-lettered ------


class SimulatedCrash(Exception):
    """A worker dying mid-turn (not an LLMError, which the turn handles itself)."""


class _CrashingModel:
    """Raises :class:`SimulatedCrash` while ``crash_if(request)``; else replies from ``inner``."""

    def __init__(self, inner: ScriptedModel, crash_if: Callable[[LLMRequest], bool]) -> None:
        self.inner = inner
        self.crash_if = crash_if
        self.requests: list[LLMRequest] = []
        self.crashes = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        if self.crash_if(request):
            self.crashes += 1
            raise SimulatedCrash(f"worker died in {request.agent_name}'s turn")
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        return None


async def test_crash_after_the_llm_call_redelivers_the_message_once(
    settings, make_services, any_redis
) -> None:
    seen: Counter[str] = Counter()

    def crash_first(request: LLMRequest) -> bool:
        seen[request.agent_name] += 1
        return request.agent_name == "Worker" and seen["Worker"] == 1

    inner = ScriptedModel().script("Worker", Reply(calls=(call("wait_for_messages"),)))
    model = _CrashingModel(inner, crash_first)
    svc, _ = _by_hand(make_services, settings, model, any_redis)
    root = _orchestrator()
    run_id = await start_run(svc, "t", root)
    worker = AgentSpec(name="Worker", role="judge", parent_id=root.id, tools=BASE_TOOLS)
    await _add_agent(svc, run_id, worker)
    await _deliver(svc, run_id, root.id, worker.id, "do-it-once-42")
    inbox = svc.store.keys.inbox(run_id, worker.id)
    job = TurnJob(run_id=run_id, agent_id=worker.id, seq=0)

    with pytest.raises(SimulatedCrash):
        await run_turn(svc, job)
    assert await _pending(svc, inbox, worker.id) == 1  # read, not acknowledged
    state = await svc.store.load_agent(run_id, worker.id)
    assert state is not None and state.seq == 0 and _incoming(state.thread) == []

    assert await run_turn(svc, job) is TurnOutcome.WAITING
    state = await svc.store.load_agent(run_id, worker.id)
    assert state is not None and state.seq == 1
    assert sum("do-it-once-42" in (m.content or "") for m in state.thread) == 1
    assert await _pending(svc, inbox, worker.id) == 0
    assert not await svc.bus.has_unread(run_id, worker)
    # Both deliveries showed the model the message; only the saved one counts.
    assert [len(_incoming(r.messages)) for r in model.requests] == [1, 1]

    assert await run_turn(svc, job) is TurnOutcome.DROPPED
    assert len(model.requests) == 2
    assert await svc.redis.xlen(svc.store.keys.dead_letters(run_id)) == 0


async def test_a_message_that_keeps_crashing_its_reader_is_dead_lettered(
    make_services, any_redis
) -> None:
    """Redelivery is not a failure of the messages a turn read: they are read again on
    every delivery, and go to the dead-letter stream only with their turn, when it is
    quarantined; the agent then ends with the reason and its parent is told."""
    settings = make_settings(limits={"max_deliveries": 2})
    poison = "poison-pill-13"
    inner = ScriptedModel(responder=lambda _r: Reply(calls=(call("wait_for_messages"),)))
    model = _CrashingModel(inner, lambda r: any(poison in (m.content or "") for m in r.messages))
    svc, _ = _by_hand(make_services, settings, model, any_redis)
    root = _orchestrator()
    run_id = await start_run(svc, "t", root)
    worker = AgentSpec(name="Worker", role="judge", parent_id=root.id, tools=BASE_TOOLS)
    await _add_agent(svc, run_id, worker)
    message_id = await _deliver(svc, run_id, root.id, worker.id, poison)
    inbox = svc.store.keys.inbox(run_id, worker.id)
    job = TurnJob(run_id=run_id, agent_id=worker.id, seq=0)

    outcome = None
    for _ in range(settings.limits.max_deliveries + 1):
        try:
            outcome = await run_turn(svc, job)
            break
        except SimulatedCrash:
            continue
    # Each of the max_deliveries deliveries read the message again (and crashed on it).
    assert model.crashes == settings.limits.max_deliveries
    assert all(poison in r.messages[-1].content for r in model.requests if r.messages[-1].content)
    assert outcome is TurnOutcome.ENDED

    dead_key = svc.store.keys.dead_letters(run_id)
    entries: Any = await svc.redis.xrange(dead_key)
    assert len(entries) == 1
    fields = entries[0][1]
    assert BUS_MESSAGE.validate_json(fields["m"]).id == message_id
    assert poison in fields["m"]
    assert (fields["reader"], fields["stream"]) == (worker.id, inbox)
    assert await _pending(svc, inbox, worker.id) == 0
    assert not await svc.bus.has_unread(run_id, worker)
    state = await svc.store.load_agent(run_id, worker.id)
    assert state is not None and state.seq == 1
    assert state.end_reason is EndReason.QUARANTINED
    assert not any(poison in (m.content or "") for m in state.thread)

    events = [e for _, e in await svc.store.read_events(run_id, count=1000)]
    errors = [e for e in events if isinstance(e, ErrorRaised) and e.agent_id == worker.id]
    dead = [e for e in errors if "dead-letter stream" in e.message]
    assert len(dead) == 1 and message_id in dead[0].message
    assert poison not in dead[0].message  # the error names the message, not its body
    assert dead_key in dead[0].hint
    assert any("quarantined" in e.message for e in errors), "the agent's end is shown"
    # Its parent is told (a failed result in its inbox), so the run does not hang.
    told: Any = await svc.redis.xrange(svc.store.keys.inbox(run_id, root.id))
    results = [BUS_MESSAGE.validate_json(f["m"]) for _, f in told]
    assert any(m.sender == worker.id and "quarantined" in m.body for m in results)


# --- 4. 1,000 messages among 50 agents, each processed exactly once ----------------------

N_AGENTS = 50
SENDS_PER_AGENT = 20
SENDS_PER_TURN = 5
TOKEN = re.compile(r"tok-\d\d-\d\d")


def _member(i: int) -> str:
    return f"M{i:02d}"


def _plan(i: int) -> list[tuple[str, str]]:
    """Agent i's messages, round-robin to the next 20 teammates: (recipient, token)."""
    return [
        (_member((i + 1 + k % (N_AGENTS - 1)) % N_AGENTS), f"tok-{i:02d}-{k:02d}")
        for k in range(SENDS_PER_AGENT)
    ]


def _busy_brain(request: LLMRequest) -> Reply:
    if request.agent_name == "Lead":
        return Reply(calls=(call("wait_for_messages"),), prompt_tokens=1, completion_tokens=1)
    i = int(request.agent_name[1:])
    done = calls_made(request, "send_message")
    batch = _plan(i)[done : done + SENDS_PER_TURN]
    calls = [call("send_message", {"to": to, "body": f"{token} for {to}"}) for to, token in batch]
    if done + len(batch) >= SENDS_PER_AGENT:
        calls.append(call("wait_for_messages"))
    return Reply(calls=tuple(calls), prompt_tokens=1, completion_tokens=1)


async def test_a_thousand_messages_among_fifty_agents_are_each_processed_once(
    make_services, any_redis
) -> None:
    # Waiting again after every wake-up is legitimate here: keep the stall detector out
    # of it (see test_an_agent_woken_repeatedly_is_not_stalled_for_waiting).
    settings = make_settings(limits={"turns_per_agent": 200, "stall_repeats": 1000})
    model = ScriptedModel(responder=_busy_brain)
    svc = make_services(settings, model, redis=any_redis)
    lead = AgentSpec(name="Lead", role="lead", team_id="team-busy", tools=BASE_TOOLS)
    run_id = await start_run(svc, "chatter", lead)
    members = [
        AgentSpec(
            name=_member(i),
            role="member",
            parent_id=lead.id,
            team_id="team-busy",
            tools=BASE_TOOLS,
        )
        for i in range(N_AGENTS)
    ]
    for spec in members:
        await _add_agent(svc, run_id, spec)
    for spec in members:
        await svc.scheduler.submit(TurnJob(run_id=run_id, agent_id=spec.id, seq=0))

    scheduler: Any = svc.scheduler
    await asyncio.wait_for(scheduler.join(), timeout=60)

    # Quiescent: no turn queued or running. Every message must have been read and acked:
    # an agent left waiting with unread mail is a lost wake-up.
    unread = [s.name for s in members if await svc.bus.has_unread(run_id, s)]
    assert unread == [], f"unread messages but no turn scheduled (lost wake-up): {unread}"
    events = [e for _, e in await svc.store.read_events(run_id, count=100_000)]
    assert [e for e in events if isinstance(e, ToolCalled) and not e.ok] == []
    expected: dict[str, set[str]] = {s.name: set() for s in members}
    for i in range(N_AGENTS):
        for to, token in _plan(i):
            expected[to].add(token)
    seen: Counter[str] = Counter()
    for spec in members:
        state = await svc.store.load_agent(run_id, spec.id)
        assert state is not None
        assert state.status is AgentStatus.WAITING, (spec.name, state.status, state.end_detail)
        mine = [t for text in _incoming(state.thread) for t in TOKEN.findall(text)]
        assert set(mine) == expected[spec.name], spec.name
        assert all(f"for {spec.name}" in text for text in _incoming(state.thread))
        seen.update(mine)
        for stream in svc.bus.streams_of(run_id, spec):
            assert await _pending(svc, stream, spec.id) == 0, (spec.name, stream)
    assert sum(seen.values()) == N_AGENTS * SENDS_PER_AGENT
    assert [t for t, n in seen.items() if n > 1] == []
    assert set(seen) == {t for i in range(N_AGENTS) for _, t in _plan(i)}


# --- 5. caps on creating agents ----------------------------------------------------------

CAPS = {"per_run": 5, "children_per_agent": 3, "max_depth": 2}


def _tool_results(thread: Any, tool: str) -> list[str]:
    return [m.content or "" for m in thread if m.role == "tool" and m.name == tool]


async def test_create_agent_refusals(make_services, any_redis) -> None:
    settings = make_settings(agents=CAPS)
    model = ScriptedModel()
    svc, recorder = _by_hand(make_services, settings, model, any_redis)
    root = _orchestrator()
    run_id = await start_run(svc, "spawn", root)

    def create(name: str, role: str, **extra: Any) -> tuple[str, dict[str, Any]]:
        return call("create_agent", {"name": name, "role": role, "purpose": "help", **extra})

    model.script(
        "Orchestrator",
        Reply(
            calls=(
                create("Wizard", "wizard"),
                create("Boss", "orchestrator"),
                create("Lead 1", "lead", tools=["calculate", "create_agent"]),
                create("Lead 1", "lead"),  # a name taken in this very turn
                create("Orchestrator", "judge"),  # a name taken in the run
                create("Spy", "member", tools=["current_time"]),
                create("Ghost", "member", tools=["teleport"]),
                create("Lead 2", "lead", tools=["create_agent"]),
                create("Judge", "judge"),
                create("Lead 3", "lead"),
            )
        ),
    )
    assert await run_turn(svc, recorder.jobs.pop()) is TurnOutcome.CONTINUED
    state = await svc.store.load_agent(run_id, root.id)
    assert state is not None
    results = _tool_results(state.thread, "create_agent")
    assert results[0].startswith("role 'wizard' cannot be created; use one of: judge, lead")
    assert results[1].startswith("role 'orchestrator' cannot be created")
    assert results[2].startswith("Created Lead 1 (id ")
    assert "an agent named 'Lead 1' already exists" in results[3]
    assert "an agent named 'Orchestrator' already exists" in results[4]
    assert results[5].startswith(
        "you can only give tools you have yourself; you lack current_time (yours: "
    )
    assert results[6].startswith("unknown tools: teleport")
    assert results[7].startswith("Created Lead 2")
    assert results[8].startswith("Created Judge")
    assert results[9] == (
        "you already have 3 children, the limit is 3; reuse them via send_message"
    )
    assert len(await svc.store.agent_ids(run_id)) == 4

    # Lead 1 fills the run (5 agents), then is refused.
    lead_id = await svc.store.resolve_name(run_id, "Lead 1")
    assert lead_id is not None
    model.script(
        "Lead 1",
        Reply(
            calls=(
                create("Member 1", "member", tools=["create_agent"], budget_share=0.5),
                create("Member 2", "member"),
            )
        ),
    )
    assert await run_turn(svc, recorder.of(lead_id)[0]) is TurnOutcome.CONTINUED
    lead = await svc.store.load_agent(run_id, lead_id)
    assert lead is not None
    results = _tool_results(lead.thread, "create_agent")
    assert results[0].startswith("Created Member 1")
    assert results[1] == (
        "the run already has 5 agents (the limit); reuse existing agents via send_message"
    )
    assert len(await svc.store.agent_ids(run_id)) == 5

    # A member at depth 2 may not create agents at all.
    member_id = await svc.store.resolve_name(run_id, "Member 1")
    assert member_id is not None
    model.script("Member 1", Reply(calls=(create("Intern", "member"),)))
    assert await run_turn(svc, recorder.of(member_id)[0]) is TurnOutcome.CONTINUED
    member = await svc.store.load_agent(run_id, member_id)
    assert member is not None and member.depth == 2
    assert _tool_results(member.thread, "create_agent") == [
        "agents at depth 2 may not create agents (max depth 2); do the work yourself or "
        "ask your parent"
    ]
    assert len(await svc.store.agent_ids(run_id)) == 5
    assert await svc.redis.scard(svc.store.keys.agent_slots(run_id)) == 5


KNOWN_REFUSALS = (
    "the limit is 3",
    "the run already has 5 agents",
    "(max depth 2)",
)


async def test_an_endlessly_spawning_agent_is_stopped(make_services, any_redis) -> None:
    settings = make_settings(agents=CAPS, limits={"turns_per_agent": 6})
    counter = itertools.count(1)

    def spawner(request: LLMRequest) -> Reply:
        n = next(counter)
        role = "lead" if request.agent_name == "Orchestrator" else "member"
        args = {"name": f"Spawn {n}", "role": role, "purpose": "spawn more", "budget_share": 0.3}
        args["tools"] = ["create_agent"]
        return Reply(calls=(call("create_agent", args),), prompt_tokens=10, completion_tokens=1)

    svc = make_services(settings, ScriptedModel(responder=spawner), redis=any_redis)
    run_id = await start_run(svc, "spawn forever", _orchestrator())
    events = await collect(svc, run_id, timeout_s=20)
    scheduler: Any = svc.scheduler
    await asyncio.wait_for(scheduler.join(), timeout=20)

    final = events[-1]
    assert isinstance(final, RunFinished) and final.status is RunStatus.FAILED
    root_end = next(
        e for e in events if isinstance(e, AgentFinished) and e.agent_id == final.agent_id
    )
    assert root_end.reason in (EndReason.MAX_TURNS, EndReason.STALLED)
    ids = await svc.store.agent_ids(run_id)
    assert 1 < len(ids) <= CAPS["per_run"]
    all_events = [e for _, e in await svc.store.read_events(run_id, count=10_000)]
    assert sum(isinstance(e, AgentCreated) for e in all_events) == len(ids)
    refusals = [
        e.result
        for e in all_events
        if isinstance(e, ToolCalled) and e.tool == "create_agent" and not e.ok
    ]
    assert refusals, "the caps never refused anything"
    assert all(any(k in r for k in KNOWN_REFUSALS) for r in refusals), refusals
    assert any("the run already has 5 agents" in r for r in refusals)
    for agent_id in ids:  # every spawner ended: a cap, or cancelled with the run
        found = await svc.store.load_spec(run_id, agent_id)
        assert found is not None and found[1].terminal, found


async def test_an_agent_creating_a_child_every_turn_is_stopped_at_its_turn_limit(
    make_services, any_redis
) -> None:
    """The breadth case: the root asks for one more child every turn; the children cap
    refuses from the fourth on, and the root's turn limit ends the run."""
    settings = make_settings(
        limits={"turns_per_agent": 8}, agents={"per_run": 5, "children_per_agent": 3}
    )
    counter = itertools.count()

    def brain(r: LLMRequest) -> Reply:
        if r.agent_name == "O":
            args = {"name": f"S{next(counter)}", "role": "lead", "purpose": "p"}
            return Reply(calls=(call("create_agent", args),))
        return Reply(calls=(call("finish", {"result": "child done"}),))

    svc = make_services(settings, ScriptedModel(responder=brain), redis=any_redis)
    o = AgentSpec(name="O", role="orchestrator", tools=("create_agent", "finish"))
    run_id = await start_run(svc, "spawn forever", o)

    events = await collect(svc, run_id, timeout_s=20)
    final = events[-1]
    assert isinstance(final, RunFinished) and final.status is RunStatus.FAILED
    assert "limit 8" in (final.error or "")
    assert len(await svc.store.agent_ids(run_id)) == 4  # O + 3 children
    refusals = [e.result for e in events if isinstance(e, ToolCalled) and not e.ok]
    assert refusals and all("the limit is 3" in text for text in refusals)


# --- 6. a burst of messages wakes a waiting agent once -----------------------------------


@pytest.mark.parametrize("turns", [1, 30], ids=["in-one-turn", "in-30-turns"])
async def test_a_burst_of_messages_wakes_a_waiting_agent_once(
    make_services, any_redis, turns: int
) -> None:
    settings = make_settings(limits={"turns_per_agent": 100})
    burst = [f"burst-{i:02d}" for i in range(30)]

    def orchestrator(request: LLMRequest) -> Reply:
        done = calls_made(request, "send_message")
        batch = burst[done : done + 30 // turns]
        return Reply(
            calls=tuple(call("send_message", {"to": "Listener", "body": b}) for b in batch)
        )

    model = ScriptedModel(
        responder=lambda r: (
            orchestrator(r)
            if r.agent_name == "Orchestrator"
            else Reply(calls=(call("wait_for_messages"),))
        )
    )
    svc, recorder = _by_hand(make_services, settings, model, any_redis)
    root = _orchestrator()
    run_id = await start_run(svc, "t", root)
    listener = AgentSpec(name="Listener", role="judge", parent_id=root.id, tools=BASE_TOOLS)
    await _add_agent(svc, run_id, listener)
    first = TurnJob(run_id=run_id, agent_id=listener.id, seq=0)
    assert await run_turn(svc, first) is TurnOutcome.WAITING

    for seq in range(turns):
        job = recorder.of(root.id)[-1]
        assert job.seq == seq
        assert await run_turn(svc, job) is TurnOutcome.CONTINUED
    assert len(await svc.redis.xrange(svc.store.keys.inbox(run_id, listener.id))) == 30

    [wake] = recorder.of(listener.id)
    assert wake == TurnJob(run_id=run_id, agent_id=listener.id, seq=1)
    assert await run_turn(svc, wake) is TurnOutcome.WAITING
    request = [r for r in model.requests if r.agent_name == "Listener"][-1]
    assert [t.split("\n", 1)[1] for t in texts(request, "[Message from")] == burst
    assert recorder.of(listener.id) == [wake]  # nothing left over to wake it again
    assert not await svc.bus.has_unread(run_id, listener)
    assert await _pending(svc, svc.store.keys.inbox(run_id, listener.id), listener.id) == 0


class _PauseAfterRead:
    """A Redis client that stops after its first read of the agent (HMGET, directly or in
    a WATCHed pipeline) until told to go on."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.read = asyncio.Event()
        self.go = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def hmget(self, *args: Any, **kwargs: Any) -> Any:
        return await self._paused(self.inner.hmget(*args, **kwargs))

    def pipeline(self, *args: Any, **kwargs: Any) -> _PausingPipeline:
        return _PausingPipeline(self.inner.pipeline(*args, **kwargs), self)

    async def _paused(self, read: Any) -> Any:
        out = await read
        if not self.read.is_set():
            self.read.set()
            await self.go.wait()
        return out


class _PausingPipeline:
    def __init__(self, inner: Any, gate: _PauseAfterRead) -> None:
        self.inner = inner
        self.gate = gate

    async def __aenter__(self) -> _PausingPipeline:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self.inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def hmget(self, *args: Any, **kwargs: Any) -> Any:
        return await self.gate._paused(self.inner.hmget(*args, **kwargs))


async def test_a_stale_wake_claim_does_not_block_later_wake_ups(
    settings, make_services, any_redis
) -> None:
    """A sender that read "waiting, seq N" just before the agent's turn N saved must not
    leave a claim for the stale seq N behind: it would block every later wake-up."""
    model = ScriptedModel(responder=lambda _r: Reply(calls=(call("wait_for_messages"),)))
    svc, _ = _by_hand(make_services, settings, model, any_redis)
    root = _orchestrator()
    run_id = await start_run(svc, "t", root)
    listener = AgentSpec(name="Listener", role="judge", parent_id=root.id, tools=BASE_TOOLS)
    await _add_agent(svc, run_id, listener)
    first = TurnJob(run_id=run_id, agent_id=listener.id, seq=0)
    assert await run_turn(svc, first) is TurnOutcome.WAITING

    await _deliver(svc, run_id, root.id, listener.id, "one")
    assert await svc.bus.claim_wake(run_id, listener.id) == 1  # its turn 1 is scheduled
    await _deliver(svc, run_id, root.id, listener.id, "two")
    # A second sender's wake-up reads the agent (waiting, seq 1) and is delayed there ...
    paused = _PauseAfterRead(svc.redis)
    slow_bus = Bus(svc.store, svc.store.keys, svc.settings.bus)
    slow_bus.redis = paused  # type: ignore[assignment]
    late_claim = asyncio.create_task(slow_bus.claim_wake(run_id, listener.id))
    await asyncio.wait_for(paused.read.wait(), timeout=5)
    # ... while turn 1 reads both messages, saves, and releases the claim.
    turn_1 = TurnJob(run_id=run_id, agent_id=listener.id, seq=1)
    assert await run_turn(svc, turn_1) is TurnOutcome.WAITING
    paused.go.set()
    stale = await asyncio.wait_for(late_claim, timeout=5)
    if stale is not None:  # the late sender submits the turn it claimed: nothing to read
        stale_job = TurnJob(run_id=run_id, agent_id=listener.id, seq=stale)
        assert await run_turn(svc, stale_job) is TurnOutcome.DROPPED

    # The next message must wake the agent for its turn 2.
    await _deliver(svc, run_id, root.id, listener.id, "three")
    assert await svc.bus.claim_wake(run_id, listener.id) == 2


# --- waiting again is not a stall; the agents-per-run count --------------------------


async def test_an_agent_woken_repeatedly_is_not_stalled_for_waiting(
    settings, make_services, any_redis
) -> None:
    """A lead collecting three results one by one waits after each: that is progress,
    not a loop, and the stall detector must not end it."""

    def orchestrator(request: LLMRequest) -> Reply:
        if calls_made(request, "create_agent") == 0:
            creates = [
                call("create_agent", {"name": f"Helper {i}", "role": "judge", "purpose": "x"})
                for i in (1, 2, 3)
            ]
            return Reply(calls=(*creates, call("wait_for_messages")))
        if len(texts(request, "[Result from")) == 3:
            return Reply(calls=(call("finish", {"result": "all three"}),))
        return Reply(calls=(call("wait_for_messages"),))

    model = ScriptedModel(
        responder=lambda r: (
            orchestrator(r)
            if r.agent_name == "Orchestrator"
            else Reply(calls=(call("finish", {"result": f"part from {r.agent_name}"}),))
        )
    )
    svc, recorder = _by_hand(make_services, settings, model, any_redis)
    root = _orchestrator()
    run_id = await start_run(svc, "collect three results", root)
    assert await run_turn(svc, recorder.jobs.pop()) is TurnOutcome.WAITING

    outcomes = []
    for i in (1, 2, 3):
        helper = await svc.store.resolve_name(run_id, f"Helper {i}")
        assert helper is not None
        assert await run_turn(svc, recorder.of(helper)[0]) is TurnOutcome.ENDED
        outcomes.append(await run_turn(svc, recorder.of(root.id)[-1]))
    state = await svc.store.load_agent(run_id, root.id)
    assert state is not None
    assert outcomes == [TurnOutcome.WAITING, TurnOutcome.WAITING, TurnOutcome.ENDED], (
        state.end_reason,
        state.end_detail,
    )
    run = await svc.store.get_run(run_id)
    assert run.status is RunStatus.COMPLETED and run.result == "all three"


async def test_a_turn_delivered_twice_reserves_one_agent_slot(make_services, any_redis) -> None:
    settings = make_settings(agents={"per_run": 3})

    def orchestrator(request: LLMRequest) -> Reply:
        n = calls_made(request, "create_agent") + 1
        args = {"name": f"Helper {n}", "role": "judge", "purpose": "x"}
        return Reply(calls=(call("create_agent", args),))

    svc, recorder = _by_hand(
        make_services, settings, SlowModel(ScriptedModel(responder=orchestrator)), any_redis
    )
    root = _orchestrator()
    run_id = await start_run(svc, "t", root)
    job = recorder.jobs.pop()
    outcomes = await asyncio.gather(run_turn(svc, job), run_turn(svc, job))
    assert sorted(outcomes) == sorted([TurnOutcome.CONTINUED, TurnOutcome.DROPPED])
    assert len(await svc.store.agent_ids(run_id)) == 2

    assert await run_turn(svc, recorder.of(root.id)[-1]) is TurnOutcome.CONTINUED
    state = await svc.store.load_agent(run_id, root.id)
    assert state is not None
    assert _tool_results(state.thread, "create_agent")[-1].startswith("Created Helper 2")
    assert len(await svc.store.agent_ids(run_id)) == 3
