"""Planning: the router's two paths, the planner's cohort, repair, and the direct path
when the model cannot route or plan."""

from __future__ import annotations

from core.llm.scripted import Reply, call
from core.planning import direct_agent_spec, plan
from tests.planning_helpers import (
    REGISTRY,
    TASK,
    as_json,
    calls_of,
    design,
    model,
    settings,
)


async def test_fast_path_answers_as_a_read_only_ui_agent() -> None:
    s = settings()
    m = model(router=Reply(content='{"path": "direct", "reason": "one fact", "answer": "42"}'))
    outcome = await plan(s, m, REGISTRY, "What is 6 times 7?")
    assert (outcome.path, outcome.cohort, outcome.llm_calls) == ("direct", None, 1)
    spec = outcome.direct
    assert spec is not None and spec.role == "ui" and "42" in spec.system_prompt
    assert "finish" in spec.tools and "calculate" in spec.tools
    for name in spec.tools:
        t = REGISTRY.get(name)
        assert t is not None and t.read_only, name
    assert not {"send_message", "create_agent", "ask_user", "wait_for_messages"} & set(spec.tools)
    assert direct_agent_spec(s, REGISTRY).tools == spec.tools


async def test_planning_path_builds_a_validated_cohort() -> None:
    s = settings()
    m = model(planner=(as_json(design()),))
    outcome = await plan(s, m, REGISTRY, TASK)
    assert outcome.path == "plan" and outcome.direct is None and not outcome.reused
    cohort = outcome.cohort
    assert cohort is not None and cohort.task == TASK
    assert [st.title for st in cohort.steps] == ["Find fares", "Compare"]
    by_name = {a.name: a for a in cohort.agents}
    root = cohort.root
    assert root.name == "Orchestrator" and root.model == "openai/big"
    assert by_name["Scout A"].parent_id == by_name["Lead A"].id
    assert by_name["Scout A"].team_id == by_name["Lead A"].team_id is not None
    assert by_name["Scout A"].tools == ("calculate", *s.agents.base_tools)
    assert by_name["Judge"].model == s.llm.model
    assert sorted(cohort.patterns.values()) == ["discussion", "fan_out"]
    assert cohort.total_budget_tokens == 4 * s.limits.tokens_per_agent + 50_000
    assert cohort.total_budget_usd == s.limits.cost_per_run_usd
    # Each agent got its prompt from the prompt creator (reflection off: the draft).
    assert by_name["Judge"].system_prompt == "Draft prompt for Judge."
    assert len(calls_of(m, "prompt_creator")) == 5
    assert calls_of(m, "planner")[0].model == "openai/planner"
    assert outcome.llm_calls == 7 and outcome.usage.total_tokens > 0


async def test_a_plan_naming_an_unknown_tool_is_repaired() -> None:
    bad = design()
    bad["agents"][2]["tools"] = ["web_search"]
    m = model(planner=(as_json(bad), as_json(design())))
    outcome = await plan(settings(), m, REGISTRY, TASK)
    assert outcome.cohort is not None
    assert all("web_search" not in a.tools for a in outcome.cohort.agents)
    first, second = calls_of(m, "planner")
    feedback = second.messages[-1]
    assert feedback.role == "user" and feedback.content is not None
    assert "agent 'Scout A' names unknown tool 'web_search'" in feedback.content
    assert "calculate" in feedback.content  # the known tools are listed
    assert second.messages[-2].role == "assistant" and len(first.messages) == 1


async def test_a_repair_through_the_submit_tool_answers_the_tool_call() -> None:
    bad = design(teams=[{"name": "A", "lead": "Lead A", "pattern": "brawl"}])
    m = model(planner=(Reply(calls=(call("submit_planner", bad),)), as_json(design())))
    await plan(settings(), m, REGISTRY, TASK)
    second = calls_of(m, "planner")[1]
    tool_msg = second.messages[-1]
    assert tool_msg.role == "tool" and tool_msg.tool_call_id == second.messages[-2].tool_calls[0].id
    assert "unknown pattern 'brawl'" in (tool_msg.content or "")
    assert "team 'B'" in (tool_msg.content or "")  # agent Lead B's team is gone too


async def test_a_malformed_plan_is_retried_then_answered_directly_with_a_note() -> None:
    s = settings(planner_attempts=3)
    replies = (
        Reply(content='{"steps": [], "agents": "all of them"}'),
        Reply(content='{"steps": [], "agents": "all of them",}'),
        Reply(calls=(call("submit_planner", "{not json"),)),
    )
    m = model(planner=replies)
    outcome = await plan(s, m, REGISTRY, TASK)
    # Three full designs, then the short form twice (the scripted model has none), then
    # the request is answered by one agent with a plain sentence.
    assert outcome.path == "direct" and outcome.cohort is None and outcome.direct is not None
    assert outcome.direct.role == "ui" and outcome.decision.fallback
    assert outcome.note.startswith("The model 'openai/planner' could not design a team")
    assert "Pick a stronger planning model" in outcome.note
    assert "[llm.models]" in outcome.note and "CARAMBA_LLM__MODELS__PLANNING" in outcome.note
    assert outcome.note in outcome.decision.reason
    second = calls_of(m, "planner")[1]
    assert "agents: Input should be a valid list" in (second.messages[-1].content or "")
    assert "steps: List should have at least 1 item" in (second.messages[-1].content or "")
    third = calls_of(m, "planner")[2]
    assert third.tools and third.response_format is None  # JSON came back: still on tools
    short = calls_of(m, "planner")[3]
    assert '{"agents": [{"name"' in (short.messages[0].content or "")
    assert len(calls_of(m, "planner")) == 5 and not calls_of(m, "prompt_creator")
    assert outcome.llm_calls == 6


async def test_a_malformed_route_takes_the_direct_path_and_says_why() -> None:
    m = model(router=Reply(calls=(call("calculate", {"expression": "1"}),)))
    m.script("router", Reply(content='{"path": "maybe"}'))
    outcome = await plan(settings(router_attempts=2), m, REGISTRY, TASK)
    assert outcome.path == "direct" and outcome.decision.fallback
    assert outcome.decision.reason.startswith("The model 'openai/gpt-4o-mini' could not route")
    assert "path: Input should be 'direct' or 'plan'" in outcome.decision.reason
    feedback = calls_of(m, "router")[1].messages[-1].content or ""
    assert "you called the tool 'calculate'; answer through 'submit_router'" in feedback
    assert not calls_of(m, "planner")


async def test_an_invalid_tree_is_repaired() -> None:
    bad = design()
    bad["agents"][2]["team"] = "B"  # a member of Lead A placed in team B
    bad["agents"][4]["parent"] = "Nobody"  # dangling parent
    bad["agents"].append({"name": "Boss", "role": "orchestrator"})  # a second root
    m = model(planner=(as_json(bad), as_json(design())))
    outcome = await plan(settings(), m, REGISTRY, TASK)
    assert outcome.cohort is not None and outcome.cohort.root.name == "Orchestrator"
    feedback = calls_of(m, "planner")[1].messages[-1].content or ""
    assert "exactly one root" in feedback
    assert "agent 'Judge' has parent 'Nobody', which is no agent" in feedback
    assert "member 'Scout A' is in team 'B' but its lead 'Lead A' leads 'A'" in feedback
