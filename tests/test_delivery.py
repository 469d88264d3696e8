"""Delivery guarantees of the bus: before-ready, crash redelivery, dead letters, exactly
once under load, one turn per burst, and the caps on creating agents."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from core.agent.context import ToolContext
from core.agent.turn import run_turn
from core.llm.base import LLMRequest, LLMResponse
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs.control import start_run
from core.scheduler import RecordingScheduler
from core.scheduler.base import TurnJob, TurnOutcome
from core.state.routing import Route
from core.types import AgentSpec, ToolCall
from core.types.events import ErrorRaised
from core.types.messages import TextMessage
from tests.conftest import make_settings
from tests.test_routing import build_tree


async def deliver(svc, run_id: str, sender: str, recipient: str, body: str) -> None:  # type: ignore[no-untyped-def]
    out = await svc.bus.outgoing(
        run_id,
        Route("agent", recipient),
        TextMessage(run_id=run_id, sender=sender, recipient=recipient, body=body),
    )
    async with svc.redis.pipeline(transaction=True) as pipe:
        for write in svc.bus.send_writes([out]):
            write(pipe)
        await pipe.execute()


def seen(request: LLMRequest, text: str) -> int:
    return sum(text in (m.content or "") for m in request.messages)


async def test_message_sent_before_the_first_turn_is_delivered(make_services, any_redis):
    model = ScriptedModel(responder=lambda r: Reply(calls=(call("wait_for_messages"),)))
    svc = make_services(make_settings(), model, redis=any_redis, start=False)
    svc.scheduler = RecordingScheduler()
    tree = await build_tree(svc)
    a2, run_id = tree["A2"], tree["A2"].run_id
    await deliver(svc, run_id, tree["LA"].spec.id, a2.spec.id, "brief addendum 7f3")

    assert (
        await run_turn(svc, TurnJob(run_id=run_id, agent_id=a2.spec.id, seq=0))
        is TurnOutcome.WAITING
    )
    assert seen(model.requests[-1], "brief addendum 7f3") == 1
    assert "[Message from LA (lead) to you]" in (model.requests[-1].messages[-1].content or "")


class CrashOnce:
    """Crashes (like a dying worker) the first ``times`` calls that see ``poison``."""

    def __init__(self, poison: str, times: int) -> None:
        self.poison, self.left = poison, times
        self.inner = ScriptedModel(responder=lambda r: Reply(calls=(call("wait_for_messages"),)))

    async def complete(self, request: LLMRequest) -> LLMResponse:
        if self.left and seen(request, self.poison):
            self.left -= 1
            raise RuntimeError("worker died mid-turn")
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        return None


async def test_crash_after_llm_call_redelivers_and_processes_once(make_services, any_redis):
    model = CrashOnce("poison-a", times=1)
    svc = make_services(make_settings(), model, redis=any_redis, start=False)
    svc.scheduler = RecordingScheduler()
    tree = await build_tree(svc)
    a1, run_id = tree["A1"], tree["A1"].run_id
    await deliver(svc, run_id, tree["LA"].spec.id, a1.spec.id, "poison-a")
    job = TurnJob(run_id=run_id, agent_id=a1.spec.id, seq=0)

    with pytest.raises(RuntimeError):
        await run_turn(svc, job)
    assert await run_turn(svc, job) is TurnOutcome.WAITING
    assert await run_turn(svc, job) is TurnOutcome.DROPPED
    state = await svc.store.load_agent(run_id, a1.spec.id)
    assert state is not None
    assert sum("poison-a" in (m.content or "") for m in state.thread) == 1
    inbox = svc.store.keys.inbox(run_id, a1.spec.id)
    assert (await svc.redis.xpending(inbox, a1.spec.id))["pending"] == 0


async def test_a_message_that_keeps_crashing_goes_to_dead_letters(make_services, any_redis):
    model = CrashOnce("poison-b", times=99)
    svc = make_services(
        make_settings(bus={"max_deliveries": 2}), model, redis=any_redis, start=False
    )
    svc.scheduler = RecordingScheduler()
    tree = await build_tree(svc)
    a1, run_id = tree["A1"], tree["A1"].run_id
    await deliver(svc, run_id, tree["LA"].spec.id, a1.spec.id, "poison-b")
    job = TurnJob(run_id=run_id, agent_id=a1.spec.id, seq=0)

    for _ in range(2):
        with pytest.raises(RuntimeError):
            await run_turn(svc, job)
    assert await run_turn(svc, job) is TurnOutcome.WAITING
    dead = await svc.redis.xrange(svc.store.keys.dead_letters(run_id))
    assert len(dead) == 1 and "poison-b" in dead[0][1]["m"]
    events = [e for _, e in await svc.store.read_events(run_id, count=1000)]
    error = next(e for e in events if isinstance(e, ErrorRaised))
    assert "dead-letter stream" in error.message and "poison-b" not in error.message
    inbox = svc.store.keys.inbox(run_id, a1.spec.id)
    assert (await svc.redis.xpending(inbox, a1.spec.id))["pending"] == 0


async def test_a_burst_of_messages_schedules_one_turn(make_services, any_redis):
    replies = {
        "A1": [Reply(calls=(call("wait_for_messages"),))],
        "LA": [
            Reply(
                calls=(
                    *(call("send_message", {"to": "A1", "body": f"m{i:02d}"}) for i in range(30)),
                    call("wait_for_messages"),
                )
            )
        ],
    }
    model = ScriptedModel(
        responder=lambda r: (
            replies[r.agent_name].pop(0)
            if replies.get(r.agent_name)
            else Reply(calls=(call("wait_for_messages"),))
        )
    )
    svc = make_services(make_settings(), model, redis=any_redis, start=False)
    recorder = RecordingScheduler()
    svc.scheduler = recorder
    tree = await build_tree(svc)
    a1, la, run_id = tree["A1"].spec.id, tree["LA"].spec.id, tree["A1"].run_id
    assert await run_turn(svc, TurnJob(run_id=run_id, agent_id=a1, seq=0)) is TurnOutcome.WAITING
    recorder.jobs.clear()
    assert await run_turn(svc, TurnJob(run_id=run_id, agent_id=la, seq=0)) is TurnOutcome.WAITING

    woken = [j for j in recorder.jobs if j.agent_id == a1]
    assert woken == [TurnJob(run_id=run_id, agent_id=a1, seq=1)]
    assert await run_turn(svc, woken[0]) is TurnOutcome.WAITING
    last = model.requests[-1]
    assert all(seen(last, f"m{i:02d}") == 1 for i in range(30))


async def test_1000_messages_among_50_agents_are_each_processed_once(make_services, any_redis):
    n_agents, per_agent, per_turn = 50, 20, 5
    names = [f"N{i:02d}" for i in range(n_agents)]

    def brain(r: LLMRequest) -> Reply:
        me = names.index(r.agent_name)
        sent = sum(
            c.name == "send_message"
            for m in r.messages
            if m.role == "assistant"
            for c in m.tool_calls
        )
        if sent >= per_agent:
            return Reply(calls=(call("wait_for_messages"),))
        batch = []
        for k in range(sent, min(sent + per_turn, per_agent)):
            to = names[(me + 1 + k % (n_agents - 1)) % n_agents]
            batch.append(call("send_message", {"to": to, "body": f"tok-{me}-{k}"}))
        return Reply(calls=tuple(batch))

    settings = make_settings(
        limits={"turns_per_agent": 200}, agents={"per_run": 100, "children_per_agent": 100}
    )
    # Agents start only once all exist, so no first message is refused as "no such agent".
    svc = make_services(settings, ScriptedModel(responder=brain), redis=any_redis, start=False)
    tools = ("send_message", "wait_for_messages", "finish")
    root = AgentSpec(name=names[0], role="orchestrator", team_id="T", tools=tools)
    run_id = await start_run(svc, "chatter", root)
    from core.agent.create import new_agent_state

    for name in names[1:]:
        spec = AgentSpec(name=name, role="member", parent_id=root.id, team_id="T", tools=tools)
        state = new_agent_state(svc, run_id, spec, task="t", requester="r", brief="talk")
        await svc.store.create_agent(state, [], svc.bus.register_writes(run_id, spec))
        await svc.scheduler.submit(TurnJob(run_id=run_id, agent_id=spec.id, seq=0))
    svc.scheduler.start(lambda job: run_turn(svc, job))
    await asyncio.wait_for(svc.scheduler.join(), timeout=120)
    events = [e for _, e in await svc.store.read_events(run_id, count=100_000)]
    assert [e for e in events if e.kind == "tool_called" and not e.ok] == []

    tokens: Counter[str] = Counter()
    for agent_id in await svc.store.agent_ids(run_id):
        state = await svc.store.load_agent(run_id, agent_id)
        assert state is not None
        for m in state.thread:
            if m.role == "user" and (m.content or "").startswith("[Message from"):
                tokens[(m.content or "").rsplit("\n", 1)[-1]] += 1
        for stream in svc.bus.streams_of(run_id, state.spec):
            assert (await svc.redis.xpending(stream, agent_id))["pending"] == 0
    expected = {f"tok-{i}-{k}" for i in range(n_agents) for k in range(per_agent)}
    assert set(tokens) == expected
    assert max(tokens.values()) == 1 and sum(tokens.values()) == 1000


async def test_caps_on_creating_agents(make_services, any_redis):
    settings = make_settings(agents={"per_run": 5, "children_per_agent": 3, "max_depth": 2})
    svc = make_services(settings, ScriptedModel(), redis=any_redis, start=False)
    svc.scheduler = RecordingScheduler()
    o = AgentSpec(
        name="O", role="orchestrator", tools=("create_agent", "calculate", "send_message", "finish")
    )
    run_id = await start_run(svc, "spawn", o)
    state = await svc.store.load_agent(run_id, o.id)
    assert state is not None

    async def create(ctx: ToolContext, **args: object) -> str:
        import json

        result = await svc.tools.execute(
            ctx,
            ToolCall(id="c", name="create_agent", arguments=json.dumps(args)),
            list(ctx.state.spec.tools),
            svc.prompts,
            8000,
        )
        return ("ok: " if result.ok else "refused: ") + result.content

    ctx = ToolContext(services=svc, state=state)
    assert (await create(ctx, name="X", role="lead", purpose="p", tools=["browse"])).startswith(
        "refused: Error"
    ) or "unknown tools: browse" in await create(
        ctx, name="X", role="lead", purpose="p", tools=["browse"]
    )
    assert "you can only give tools you have yourself" in await create(
        ctx, name="X", role="lead", purpose="p", tools=["days_between"]
    )
    assert "cannot be created" in await create(ctx, name="X", role="orchestrator", purpose="p")
    for i in range(3):
        assert (
            await create(ctx, name=f"C{i}", role="lead", purpose="p", tools=["create_agent"])
        ).startswith("ok: ")
    assert "already exists" in await create(
        ctx, name="C0", role="lead", purpose="p"
    ) or "the limit is 3" in await create(ctx, name="C0", role="lead", purpose="p")
    assert "the limit is 3" in await create(ctx, name="C9", role="lead", purpose="p")
    # Save O's turn so its children exist, then let a child spawn down to the depth cap.
    state.seq = 1
    from core.agent.turn_io import TurnIO

    io = TurnIO(svc, state)
    io.ctx = ctx
    assert await svc.store.commit_turn(state, 0, io.events(), state.usage, writes=io.writes())
    child = await svc.store.load_agent(run_id, ctx.spawned[0].spec.id)
    assert child is not None and child.depth == 1
    child_ctx = ToolContext(services=svc, state=child)
    assert (await create(child_ctx, name="D1", role="member", purpose="p")).startswith("ok: ")
    assert "the run already has 5 agents" in await create(
        child_ctx, name="D2", role="member", purpose="p"
    )
    spawned = child_ctx.spawned[0]
    grandchild = spawned.model_copy(
        update={"depth": 2, "spec": spawned.spec.model_copy(update={"tools": ("create_agent",)})}
    )
    deep = ToolContext(services=svc, state=grandchild)
    assert "max depth 2" in await create(deep, name="E1", role="member", purpose="p")
    assert await svc.redis.scard(svc.store.keys.agent_slots(run_id)) == 5


async def test_an_endlessly_spawning_agent_is_stopped(make_services, any_redis):
    settings = make_settings(
        limits={"turns_per_agent": 8}, agents={"per_run": 5, "children_per_agent": 3}
    )
    counter = iter(range(1000))

    def brain(r: LLMRequest) -> Reply:
        if r.agent_name == "O":
            return Reply(
                calls=(
                    call(
                        "create_agent",
                        {"name": f"S{next(counter)}", "role": "lead", "purpose": "p"},
                    ),
                )
            )
        return Reply(calls=(call("finish", {"result": "child done"}),))

    svc = make_services(settings, ScriptedModel(responder=brain), redis=any_redis)
    o = AgentSpec(name="O", role="orchestrator", tools=("create_agent", "finish"))
    run_id = await start_run(svc, "spawn forever", o)
    from tests.helpers import collect

    events = await collect(svc, run_id, timeout_s=20)
    final = events[-1]
    assert final.kind == "run_finished" and final.status.value == "failed"
    assert "limit 8" in (final.error or "")
    assert len(await svc.store.agent_ids(run_id)) == 4  # O + 3 children
    refusals = [e.result for e in events if e.kind == "tool_called" and not e.ok]
    assert refusals and all("the limit is 3" in text for text in refusals)
