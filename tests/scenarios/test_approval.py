"""The approval flow in core: who may decide, expiry, edits re-validated, a designed
cohort started as a whole tree."""

from __future__ import annotations

import asyncio
import time

from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from core.process import background
from core.runs import control
from core.runs.approval import Approve, Reject, decide, view
from core.runs.edits import AgentEdit, Edit
from core.types import AgentSpec, Budget, Cohort, TeamSpec
from core.types.events import AgentCreated, RunFinished
from core.types.run import RunStatus
from tests.conftest import make_settings
from tests.helpers import collect
from tests.scenarios import texts


def solo() -> AgentSpec:
    return AgentSpec(name="Solo", role="solo", tools=("calculate", "finish"))


async def test_only_the_requester_and_approvers_decide(make_services, any_redis) -> None:
    settings = make_settings(approval={"approvers": ["@lead"]})
    svc = make_services(settings, ScriptedModel(), redis=any_redis)
    run_id = await control.propose_run(svc, "t", solo(), requested_by="@ana")

    refused = await decide(svc, run_id, "@mallory", Approve())
    assert not refused.ok and "Only @ana, who asked, or one of the approvers" in refused.message
    assert refused.run.status is RunStatus.PROPOSED

    approved = await decide(svc, run_id, "@lead", Approve())
    assert approved.ok and approved.message == "Approved by @lead."
    again = await decide(svc, run_id, "@ana", Reject(reason="too late"))
    assert not again.ok and "already" in again.message and "@lead" in again.message
    assert isinstance((await collect(svc, run_id))[-1], RunFinished)


async def test_an_expired_proposal_cannot_be_approved(make_services, any_redis) -> None:
    settings = make_settings(approval={"expire_s": 0.05})
    svc = make_services(settings, ScriptedModel(), redis=any_redis)
    run_id = await control.propose_run(svc, "t", solo(), requested_by="@ana")
    await asyncio.sleep(0.1)
    outcome = await decide(svc, run_id, "@ana", Approve())
    assert not outcome.ok and "expired" in outcome.message and "ask again" in outcome.message
    run = await svc.store.get_run(run_id)
    assert run.status is RunStatus.CANCELLED and await svc.store.agent_ids(run_id) == []


async def test_an_undecided_proposal_is_cancelled_when_it_expires(make_services, any_redis) -> None:
    settings = make_settings(approval={"expire_s": 0.05})
    svc = make_services(settings, ScriptedModel(), redis=any_redis)
    # Asked "what is due" at the moment before either proposal was made: a busy machine's
    # slow steps cannot make the timers due early (CI once took over 50 ms for them).
    before = time.time()
    stale = await control.propose_run(svc, "t", solo(), requested_by="@ana")
    decided = await control.propose_run(svc, "t", solo(), requested_by="@ana")
    assert (await decide(svc, decided, "@ana", Reject())).ok
    assert await background.fire_due(svc, now=before) == 0, "not due yet"
    await asyncio.sleep(0.1)
    assert await background.fire_due(svc) == 1, "the decided proposal's timer was taken back"
    (event,) = await collect(svc, stale)
    assert isinstance(event, RunFinished) and event.status is RunStatus.CANCELLED
    assert event.error == "the proposal expired before anyone approved it"
    assert (await svc.store.get_run(decided)).status is RunStatus.REJECTED


async def test_an_edit_is_validated_and_changes_the_agent_that_runs(
    settings, make_services, any_redis
) -> None:
    model = ScriptedModel(responder=lambda r: Reply(calls=(call("finish", {"result": "ok"}),)))
    svc = make_services(settings, model, redis=any_redis)
    spec = solo()
    run_id = await control.propose_run(svc, "t", spec, requested_by="@ana")

    bad = await decide(
        svc, run_id, "@ana", Edit(agents=(AgentEdit(agent_id=spec.id, tools=("teleport",)),))
    )
    assert not bad.ok and "Solo (tools): there is no tool named teleport" in bad.message
    assert "available: " in bad.message
    # Each problem names its agent and field, so a form shows it in its place.
    (problem,) = bad.problems
    assert (problem.agent_id, problem.field) == (spec.id, "tools")

    wrong_model = await decide(
        svc,
        run_id,
        "@ana",
        Edit(agents=(AgentEdit(agent_id=spec.id, model="openai/no-such-model-xyz"),)),
    )
    assert not wrong_model.ok and [p.field for p in wrong_model.problems] == ["model"]
    assert "'openai/no-such-model-xyz' is not a model Caramba knows" in wrong_model.message

    # Only current_time chosen: the agent keeps its base tools (finish, messaging), or it
    # could never finish.
    good = Edit(
        agents=(
            AgentEdit(
                agent_id=spec.id,
                system_prompt="Answer in French.",
                tools=("current_time",),
                max_tokens=5000,
            ),
        )
    )
    edited = await decide(svc, run_id, "@ana", good)
    assert edited.ok and edited.run.status is RunStatus.PROPOSED
    card = view(settings, edited.run).agents[0]
    base = settings.agents.base_tools
    assert card.tools == ("current_time", *base) and card.max_tokens == 5000
    assert card.prompt_excerpt == "Answer in French."

    assert (await decide(svc, run_id, "@ana", Approve())).ok
    await collect(svc, run_id)
    first = model.requests[0]
    assert "Answer in French." in (first.messages[0].content or "")
    assert sorted(t["function"]["name"] for t in first.tools) == sorted(("current_time", *base))


def _cohort() -> Cohort:
    root = AgentSpec(
        name="Orchestrator",
        role="orchestrator",
        tools=("send_message", "wait_for_messages", "finish", "calculate"),
        description="Runs the work.",
    )
    lead = AgentSpec(
        name="Lead",
        role="lead",
        parent_id=root.id,
        team_id="team-a",
        tools=("send_message", "wait_for_messages", "finish", "calculate"),
        description="Collect the members' answers.",
    )
    members = [
        AgentSpec(
            name=f"Member {i}",
            role="member",
            parent_id=lead.id,
            team_id="team-a",
            tools=("calculate", "finish"),
            description=f"Compute {i} * 7.",
        )
        for i in (1, 2)
    ]
    return Cohort(
        task="Two products",
        agents=(root, lead, *members),
        teams=(TeamSpec(id="team-a", lead_id=lead.id, pattern="fan_out"),),
    )


async def test_a_designed_cohort_starts_as_a_whole_tree(settings, make_services, any_redis) -> None:
    def respond(r: LLMRequest) -> Reply:
        results = texts(r, "[Result from")
        if r.agent_name.startswith("Member"):
            return Reply(calls=(call("finish", {"result": f"{r.agent_name}: done"}),))
        if r.agent_name == "Lead":
            if len(results) < 2:
                return Reply(calls=(call("wait_for_messages"),))
            return Reply(calls=(call("finish", {"result": "both members done"}),))
        if not results:
            return Reply(calls=(call("wait_for_messages"),))
        return Reply(calls=(call("finish", {"result": "all done"}),))

    svc = make_services(settings, ScriptedModel(responder=respond), redis=any_redis)
    cohort = _cohort()
    run_id = await control.propose_run(svc, cohort.task, cohort, requested_by="@ana")
    card = view(settings, await svc.store.get_run(run_id))
    assert [a.name for a in card.agents] == ["Orchestrator", "Lead", "Member 1", "Member 2"]
    assert card.agents[2].parent == "Lead" and card.patterns == ("Lead: fan_out",)

    # Removing the lead removes its members too; the top agent cannot be removed.
    lead_id = cohort.agents[1].id
    trimmed = await decide(
        svc, run_id, "@ana", Edit(agents=(AgentEdit(agent_id=lead_id, remove=True),))
    )
    assert trimmed.ok and [a.name for a in view(settings, trimmed.run).agents] == ["Orchestrator"]
    top = await decide(
        svc, run_id, "@ana", Edit(agents=(AgentEdit(agent_id=cohort.root.id, remove=True),))
    )
    assert not top.ok and "cannot be removed" in top.message

    # Put the full cohort back by proposing it again, and run it.
    run_id = await control.propose_run(svc, cohort.task, cohort, requested_by="@ana")
    assert (await decide(svc, run_id, "@ana", Approve())).ok
    events = await collect(svc, run_id)
    final = events[-1]
    assert isinstance(final, RunFinished) and final.result == "all done"
    created = [e.name for e in events if isinstance(e, AgentCreated)]
    assert created == ["Orchestrator", "Lead", "Member 1", "Member 2"]
    lead = await svc.store.load_agent(run_id, lead_id)
    assert lead is not None and lead.depth == 1 and len(lead.children) == 2
    assert "Member 1" in (lead.thread[0].content or "")  # the playbook names its members


async def test_the_embedded_flow_edits_then_approves_then_runs(settings) -> None:
    from core.process.embedded import embedded_services, run_proposal

    model = ScriptedModel(responder=lambda r: Reply(calls=(call("finish", {"result": "fini"}),)))
    spec = solo()
    decisions = iter(
        [Edit(agents=(AgentEdit(agent_id=spec.id, system_prompt="Answer in French."),)), Approve()]
    )
    shown: list[str] = []

    async def ask(card):  # type: ignore[no-untyped-def]
        shown.append(card.agents[0].prompt_excerpt)
        return next(decisions)

    messages: list[str] = []
    async with embedded_services(settings, model) as svc:
        run = await run_proposal(svc, "t", spec, ask, on_message=messages.append, timeout_s=10)
    assert run.status is RunStatus.COMPLETED and run.result == "fini"
    assert shown == ["", "Answer in French."]
    assert messages == ["Updated by console; approve it to start.", "Approved by console."]
    assert "Answer in French." in (model.requests[0].messages[0].content or "")


def test_the_card_says_what_was_reused_and_its_record(settings) -> None:
    from core.types.cohort import ReusedEntry
    from core.types.run import RunState

    record = ReusedEntry(
        entry_id="coh_1",
        kind="cohort",
        name="flight desk",
        similarity=0.82,
        runs=5,
        successes=4,
        approvals=3,
        ratings=2,
        mean_rating=4.5,
    )
    cohort = _cohort().model_copy(update={"reused_from": record})
    run = RunState(id="run_1", task="t", cohort=cohort, root=cohort.root)
    card = view(settings, run)
    assert card.reused_from == (
        "cohort flight desk (similarity 0.82; 4/5 runs succeeded, 3 approvals, rated 4.5/5 (2×))"
    )


async def test_the_run_gets_and_keeps_the_budget_its_planner_designed(
    settings, make_services, any_redis
) -> None:
    """Not the global defaults: the agents' token budgets added up and the planner's
    budget_usd, and an edit of an agent's budget changes the run's."""
    model = ScriptedModel(responder=lambda r: Reply(calls=(call("finish", {"result": "ok"}),)))
    svc = make_services(settings, model, redis=any_redis)
    designed = _cohort()
    agents = tuple(
        a.model_copy(update={"budget": Budget(max_tokens=10_000)}) for a in designed.agents
    )
    cohort = designed.model_copy(update={"agents": agents, "total_budget_usd": 0.75})
    run_id = await control.propose_run(svc, cohort.task, cohort, requested_by="@ana")

    run = await svc.store.get_run(run_id)
    assert run.budget is not None
    assert (run.budget.tokens, run.budget.cost_usd) == (40_000, 0.75)
    assert view(settings, run).budget == run.budget

    lead = agents[1]
    edited = await decide(
        svc, run_id, "@ana", Edit(agents=(AgentEdit(agent_id=lead.id, max_tokens=25_000),))
    )
    assert edited.ok and edited.run.budget is not None
    assert (edited.run.budget.tokens, edited.run.budget.cost_usd) == (55_000, 0.75)
