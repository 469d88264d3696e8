"""One budget path (issue 22), in core: a chat request planned by a worker
(``core.runs.requests``) is proposed with the budget its planner designed — what the card
shows (``approval.view``) and what approval starts — and a direct answer with the
default; an edit of the proposal changes only what it edits: instructions, tools or a
model keep the run's budget as it was, agents' budgets and agents added or removed
recompute it from the design."""

from __future__ import annotations

from typing import Any

from core.llm.scripted import Reply, ScriptedModel, call
from core.runs import control
from core.runs.approval import Approve, decide, view
from core.runs.edits import AgentEdit, Edit
from core.runs.requests import request_run
from core.services import Services
from core.types import AgentSpec, Cohort
from core.types.run import RunBudget, RunState, RunStatus
from tests.planning_helpers import as_json, design, model, prompt_writer
from tests.scenarios.test_requests import quiet_settings, until_status

# The design's token budgets: Scout A's 50,000 and 20,000 for each of the four others.
TOKENS = 50_000 + 4 * 20_000
USD = 0.5


def small_design() -> dict[str, Any]:
    d = design(budget_usd=USD)
    for agent in d["agents"]:
        agent.setdefault("max_tokens", 20_000)
    return d


async def proposed(svc: Services) -> RunState:
    run_id = await request_run(svc, "Compare flights to Berlin.", requested_by="@ana")
    await until_status(svc, run_id, RunStatus.PROPOSED)
    return await svc.store.get_run(run_id)


def planned(svc: Services, tokens: int = TOKENS, usd: float = USD) -> RunBudget:
    return RunBudget(tokens=tokens, cost_usd=usd, wall_clock_s=svc.settings.limits.wall_clock_s)


def agent(run: RunState, name: str) -> AgentSpec:
    assert run.cohort is not None
    return next(a for a in run.cohort.agents if a.name == name)


async def edit(svc: Services, run: RunState, *changes: AgentEdit, **more: Any) -> RunState:
    outcome = await decide(svc, run.id, "@ana", Edit(agents=changes, **more))
    assert outcome.ok, outcome.message
    return outcome.run


async def test_a_planned_request_is_proposed_and_started_with_its_planners_budget(
    make_services, any_redis
) -> None:
    def respond(request: Any) -> Reply:
        if "The agent: " in (request.messages[-1].content or ""):
            return prompt_writer(request)
        return Reply(calls=(call("finish", {"result": "ok"}),))

    m = model(planner=(as_json(small_design()),))
    m.responder = respond
    svc = make_services(quiet_settings(), m, redis=any_redis)
    run = await proposed(svc)
    assert run.budget == planned(svc), "not the configured 1,000,000 tokens and $5.00"
    assert view(svc.settings, run, svc.tools).budget == run.budget

    approved = await decide(svc, run.id, "@ana", Approve())
    assert approved.ok and approved.run.budget == planned(svc), "runs with what the card showed"
    await until_status(svc, run.id, RunStatus.COMPLETED)
    assert (await svc.store.get_run(run.id)).budget == planned(svc)


async def test_a_direct_answer_keeps_the_default_budget(make_services, any_redis) -> None:
    m = ScriptedModel(responder=lambda r: Reply(calls=(call("finish", {"result": "Paris."}),)))
    direct = {"path": "direct", "reason": "a fact", "answer": "Paris."}
    m.script("router", Reply(calls=(call("submit_router", direct),)))
    svc = make_services(quiet_settings(), m, redis=any_redis)
    run_id = await request_run(svc, "What is the capital of France?", requested_by="@ana")
    await until_status(svc, run_id, RunStatus.COMPLETED)
    limits = svc.settings.limits
    assert (await svc.store.get_run(run_id)).budget == RunBudget(
        tokens=limits.tokens_per_run,
        cost_usd=limits.cost_per_run_usd,
        wall_clock_s=limits.wall_clock_s,
    )


async def test_an_edit_changes_the_budget_only_when_it_edits_budgets_or_agents(
    make_services, any_redis
) -> None:
    svc = make_services(quiet_settings(), model(planner=(as_json(small_design()),)), any_redis)
    run = await proposed(svc)
    judge, scout, lead_b = (agent(run, n) for n in ("Judge", "Scout A", "Lead B"))

    # Instructions, tools, a model: the budget stays exactly as the card showed it.
    run = await edit(svc, run, AgentEdit(agent_id=judge.id, system_prompt="Judge fairly."))
    run = await edit(svc, run, AgentEdit(agent_id=scout.id, tools=("calculate", "web_search")))
    run = await edit(svc, run, AgentEdit(agent_id=judge.id, model="openai/gpt-4o-mini"))
    assert run.budget == planned(svc) and agent(run, "Judge").system_prompt == "Judge fairly."
    # The same figure again is no change either.
    run = await edit(svc, run, AgentEdit(agent_id=scout.id, max_tokens=50_000))
    assert run.budget == planned(svc)

    # An agent's token budget: the run's moves by as much; its cost stays the planner's.
    run = await edit(svc, run, AgentEdit(agent_id=scout.id, max_tokens=80_000))
    assert run.budget == planned(svc, TOKENS + 30_000)
    # An agent removed takes its budget away; one added brings its own.
    run = await edit(svc, run, AgentEdit(agent_id=lead_b.id, remove=True))
    assert run.budget == planned(svc, TOKENS + 30_000 - 20_000)
    orchestrator = agent(run, "Orchestrator")
    helper = AgentSpec(name="Helper", role="member", parent_id=orchestrator.id)
    run = await edit(svc, run, add=(helper,))
    per_agent = svc.settings.limits.tokens_per_agent  # an agent without a budget of its own
    assert run.budget == planned(svc, TOKENS + 10_000 + per_agent)

    # Every agent given a cost budget: the run's cost is theirs added up.
    assert run.cohort is not None
    costs = tuple(AgentEdit(agent_id=a.id, max_cost_usd=0.25) for a in run.cohort.agents)
    run = await edit(svc, run, *costs)
    assert run.budget == planned(svc, TOKENS + 10_000 + per_agent, 0.25 * len(costs))


async def test_a_budget_set_for_the_proposal_survives_an_unrelated_edit(
    settings, make_services, any_redis
) -> None:
    """The bug of issue 22: an edit of the instructions cut the run's budget to the
    design's (about 10× less); now only an edit of budgets or agents moves it."""
    svc = make_services(settings, ScriptedModel(), redis=any_redis)
    lead = AgentSpec(name="Lead", role="orchestrator", tools=("calculate",))
    spec = lead.model_copy(update={"budget": lead.budget.model_copy(update={"max_tokens": 1000})})
    member = AgentSpec(name="Member", role="member", parent_id=spec.id)
    cohort = Cohort(task="t", agents=(spec, member), total_budget_usd=0.1)
    chosen = RunBudget(tokens=900_000, cost_usd=4.0, wall_clock_s=600)
    run_id = await control.propose_run(svc, "t", cohort, requested_by="@ana", budget=chosen)
    run = await svc.store.get_run(run_id)
    run = await edit(svc, run, AgentEdit(agent_id=member.id, system_prompt="Help the lead."))
    assert run.budget == chosen
    run = await edit(svc, run, AgentEdit(agent_id=spec.id, max_tokens=2000))
    assert run.budget == RunBudget(
        tokens=2000 + svc.settings.limits.tokens_per_agent,
        cost_usd=0.1,
        wall_clock_s=svc.settings.limits.wall_clock_s,
    )
