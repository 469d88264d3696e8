"""Hierarchical budgets: a child's budget is carved out of its creator's remainder, and
what a subtree spent rolls up to its root with the results."""

from __future__ import annotations

from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs.control import start_run
from core.types import AgentSpec, Budget
from core.types.events import AgentCreated, AgentFinished, RunFinished
from tests.helpers import collect
from tests.scenarios import calls_made, texts


def _team() -> ScriptedModel:
    def respond(r: LLMRequest) -> Reply:
        if r.agent_name == "Root":
            if not calls_made(r, "create_agent"):
                return Reply(
                    calls=(
                        call(
                            "create_agent",
                            {"name": "A", "role": "judge", "purpose": "a", "budget_share": 0.5},
                        ),
                        call(
                            "create_agent",
                            {"name": "B", "role": "judge", "purpose": "b", "budget_share": 0.5},
                        ),
                        call("wait_for_messages"),
                    ),
                    prompt_tokens=1000,
                    completion_tokens=0,
                )
            if len(texts(r, "[Result from")) < 2:
                return Reply(
                    calls=(call("wait_for_messages"),), prompt_tokens=10, completion_tokens=0
                )
            return Reply(
                calls=(call("finish", {"result": "both done"}),),
                prompt_tokens=10,
                completion_tokens=0,
            )
        return Reply(
            calls=(call("finish", {"result": f"{r.agent_name} done"}),),
            prompt_tokens=300,
            completion_tokens=0,
        )

    return ScriptedModel(responder=respond, cost_per_call_usd=0.01)


async def test_children_get_shares_of_the_remainder_and_spending_rolls_up(
    settings, make_services, any_redis
) -> None:
    svc = make_services(settings, _team(), redis=any_redis)
    root = AgentSpec(
        name="Root",
        role="orchestrator",
        tools=("create_agent", "wait_for_messages", "finish"),
        budget=Budget(max_tokens=101_000, max_cost_usd=1.0),
    )
    run_id = await start_run(svc, "split the work", root)
    events = await collect(svc, run_id)
    assert isinstance(events[-1], RunFinished) and events[-1].result == "both done"

    created = {e.name: e.agent_id for e in events if isinstance(e, AgentCreated)}
    a = await svc.store.load_agent(run_id, created["A"])
    b = await svc.store.load_agent(run_id, created["B"])
    assert a is not None and b is not None
    # Root had 101,000 − 1,000 spent = 100,000 tokens and $1.00 − $0.01 = $0.99 left.
    assert (a.spec.budget.max_tokens, a.spec.budget.max_cost_usd) == (50_000, 0.495)
    # B's half is of what remained after A's share was set aside.
    assert (b.spec.budget.max_tokens, b.spec.budget.max_cost_usd) == (25_000, 0.2475)

    finished = {e.agent_id: e for e in events if isinstance(e, AgentFinished)}
    root_end = finished[root.id]
    own = root_end.tokens
    children = sum(finished[created[n]].tokens for n in ("A", "B"))
    assert children == 600
    assert root_end.subtree_tokens == own + children
    assert abs(root_end.subtree_cost_usd - (root_end.cost_usd + 0.02)) < 1e-9
