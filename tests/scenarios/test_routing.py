"""The full routing matrix, through the real send_message tool and the bus."""

from __future__ import annotations

import pytest

from core.agent.context import ToolContext
from core.agent.create import new_agent_state
from core.llm.scripted import ScriptedModel
from core.runs.control import start_run
from core.scheduler import RecordingScheduler
from core.types import AgentSpec, ToolCall
from core.types.agent import AgentState
from tests.conftest import make_settings

TOOLS = ("send_message", "roster", "wait_for_messages", "finish")


async def build_tree(svc) -> dict[str, AgentState]:  # type: ignore[no-untyped-def]
    """O (root) → LA (team A) → A1, A2; O → LB (team B) → B1; O → J (judge)."""
    o = AgentSpec(name="O", role="orchestrator", tools=TOOLS)
    run_id = await start_run(svc, "routing", o)
    specs = {
        "O": o,
        "LA": AgentSpec(name="LA", role="lead", parent_id=o.id, team_id="A", tools=TOOLS),
        "LB": AgentSpec(name="LB", role="lead", parent_id=o.id, team_id="B", tools=TOOLS),
        "J": AgentSpec(name="J", role="judge", parent_id=o.id, tools=TOOLS),
    }
    specs["A1"] = AgentSpec(
        name="A1", role="member", parent_id=specs["LA"].id, team_id="A", tools=TOOLS
    )
    specs["A2"] = AgentSpec(
        name="A2", role="member", parent_id=specs["LA"].id, team_id="A", tools=TOOLS
    )
    specs["B1"] = AgentSpec(
        name="B1", role="member", parent_id=specs["LB"].id, team_id="B", tools=TOOLS
    )
    states = {"O": await svc.store.load_agent(run_id, o.id)}
    for name, spec in specs.items():
        if name == "O":
            continue
        state = new_agent_state(svc, run_id, spec, task="t", requester="r", brief="b")
        await svc.store.create_agent(state, [], svc.bus.register_writes(run_id, spec))
        states[name] = state
    states["O"].children = [specs[n].id for n in ("LA", "LB", "J")]
    states["LA"].children = [specs["A1"].id, specs["A2"].id]
    states["LB"].children = [specs["B1"].id]
    return states


AGENTS = ("O", "LA", "LB", "J", "A1", "A2", "B1")
# sender → recipients it may message directly (by name or id).
DIRECT_OK = {
    "O": {"LA", "LB", "J"},
    "LA": {"O", "A1", "A2"},
    "LB": {"O", "B1"},
    "J": {"O"},
    "A1": {"LA", "A2"},
    "A2": {"LA", "A1"},
    "B1": {"LB"},
}
KEYWORD_OK = {  # sender → which of parent / team / all it may use
    "O": {"all"},
    "LA": {"parent", "team"},
    "LB": {"parent", "team"},
    "J": {"parent"},
    "A1": {"parent", "team"},
    "A2": {"parent", "team"},
    "B1": {"parent", "team"},
}
CASES = [(s, r) for s in AGENTS for r in (*AGENTS, "parent", "team", "all", "Nobody")]


def expected_refusal(sender: str, target: str) -> str:
    if target == "Nobody":
        return 'There is no agent "Nobody"'
    if target == sender:
        return "You cannot message yourself"
    if target == "parent":
        return "You have no parent"
    if target == "team":
        return "You are not on a team"
    if target == "all":
        return "Only the orchestrator may broadcast"
    return "is not your parent, your child or on your team"


@pytest.mark.parametrize(("sender", "target"), CASES, ids=[f"{s}->{r}" for s, r in CASES])
async def test_routing_matrix(sender, target, make_services, any_redis) -> None:
    svc = make_services(make_settings(), ScriptedModel(), redis=any_redis, start=False)
    svc.scheduler = RecordingScheduler()
    states = await build_tree(svc)
    me = states[sender]
    allowed = target in DIRECT_OK[sender] or target in KEYWORD_OK[sender]
    addresses = [target]
    if target in states:
        addresses.append(states[target].spec.id)  # by id as well as by name
    for address in addresses:
        ctx = ToolContext(services=svc, state=me)
        call = ToolCall(
            id="c1", name="send_message", arguments=f'{{"to": "{address}", "body": "hello"}}'
        )
        result = await svc.tools.execute(ctx, call, list(TOOLS), svc.prompts, 8000)
        if allowed:
            assert result.ok, result.content
            (out,) = ctx.outbox
            keys = svc.store.keys
            run_id = me.run_id
            if target == "team":
                assert out.stream == keys.team(run_id, me.spec.team_id)
                mates = {n for n in AGENTS if states[n].spec.team_id == me.spec.team_id}
                assert set(out.recipients) == {states[n].spec.id for n in mates - {sender}}
            elif target == "all":
                assert out.stream == keys.broadcast(run_id)
                assert set(out.recipients) == {states[n].spec.id for n in AGENTS} - {me.spec.id}
            else:
                dest = states[target].spec.id if target != "parent" else me.spec.parent_id
                assert out.stream == keys.inbox(run_id, dest)
                assert out.recipients == (dest,)
        else:
            assert not result.ok
            assert expected_refusal(sender, target) in result.content, result.content
            assert "You may address:" in result.content
            assert ctx.outbox == []
            if target in states and target != sender and target not in ("Nobody",):
                assert "reach them through" in result.content


async def test_roster_lists_whom_an_agent_may_address(make_services, any_redis) -> None:
    svc = make_services(make_settings(), ScriptedModel(), redis=any_redis, start=False)
    svc.scheduler = RecordingScheduler()
    states = await build_tree(svc)
    ctx = ToolContext(services=svc, state=states["LA"])
    call = ToolCall(id="c1", name="roster", arguments="{}")
    result = await svc.tools.execute(ctx, call, list(TOOLS), svc.prompts, 8000)
    assert result.ok
    lines = result.content.splitlines()
    assert lines[0].startswith("You are LA (id ") and "team A" in lines[0]
    assert any(line.startswith("- O (") and "your parent" in line for line in lines)
    assert sum(line.startswith("- ") and "your child" in line for line in lines) == 2
    assert not any("LB" in line or "B1" in line for line in lines)
    assert lines[-1].startswith('You may address: "parent"')
