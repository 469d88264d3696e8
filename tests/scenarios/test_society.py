"""Agents creating agents and talking over the bus: scripted scenarios end to end."""

from __future__ import annotations

from core.runs.control import start_run
from core.types.agent import AgentStatus
from core.types.events import AgentCreated, AgentFinished, MessageSent, RunFinished
from core.types.run import RunStatus
from tests import scenarios
from tests.helpers import collect
from tests.schedulers import SCHEDULERS, scheduled_services


@SCHEDULERS
async def test_competition_scenario(settings, any_redis, kind) -> None:
    model = scenarios.competition()
    async with scheduled_services(settings, model, kind, any_redis) as svc:
        run_id = await start_run(
            svc, "Leap-year seconds, best answer wins", scenarios.orchestrator()
        )
        events = await collect(svc, run_id, timeout_s=20)

    final = events[-1]
    assert isinstance(final, RunFinished), events[-3:]
    assert final.status is RunStatus.COMPLETED
    assert (
        final.result == "Winner: [Result from Judge (judge)]\nCandidate A: it shows the "
        "full calculation."
    )
    created = {e.name: e for e in events if isinstance(e, AgentCreated)}
    assert set(created) == {
        "Orchestrator",
        "Team A lead",
        "Team B lead",
        "Judge",
        "Team A analyst",
        "Team B analyst",
    }
    finished = {e.agent_id: e.reason.value for e in events if isinstance(e, AgentFinished)}
    assert len(finished) == 6 and set(finished.values()) == {"finished"}
    # The judge saw both candidates, anonymised, in one message from the orchestrator.
    judge_id = created["Judge"].agent_id
    sent = [e for e in events if isinstance(e, MessageSent) and e.recipient == judge_id]
    assert len(sent) == 1 and "Candidate A" in sent[0].preview
    for agent_id in await svc.store.agent_ids(run_id):
        found = await svc.store.load_spec(run_id, agent_id)
        assert found is not None and found[1] is AgentStatus.FINISHED


@SCHEDULERS
async def test_discussion_scenario(settings, any_redis, kind) -> None:
    model = scenarios.discussion()
    async with scheduled_services(settings, model, kind, any_redis) as svc:
        run_id = await start_run(svc, "Ship on Friday?", scenarios.orchestrator())
        events = await collect(svc, run_id, timeout_s=20)

    final = events[-1]
    assert isinstance(final, RunFinished) and final.status is RunStatus.COMPLETED
    assert final.result == ("Consensus after 2 rounds: ship on Friday with a rollback plan.")
    # Rounds went to the team topic; members answered their lead directly.
    team_posts = [
        e for e in events if isinstance(e, MessageSent) and e.recipient.startswith("team:")
    ]
    assert [e.preview.split(":")[0] for e in team_posts] == ["Round 1", "Round 2"]
    lead_requests = [r for r in model.requests if r.agent_name == "Panel lead"]
    seen = "\n".join(m.content or "" for m in lead_requests[-1].messages)
    assert "No: there is no rollback plan." in seen
    assert seen.count("I agree, with a rollback plan.") == 2
    # The playbook was part of the lead's system prompt.
    assert "Playbook: discussion" in (lead_requests[0].messages[0].content or "")
