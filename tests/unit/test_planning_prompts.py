"""The prompt creator: draft, critique, refine; rounds from config, 0 = off."""

from __future__ import annotations

from core.llm.scripted import Reply, ScriptedModel
from core.planning import PromptCreator
from core.planning.structured import Meter
from core.types import AgentSpec
from core.types.cohort import Cohort, TeamSpec
from tests.planning_helpers import REGISTRY, TASK, calls_of, prompt_writer, prompts_for, settings


def cohort() -> Cohort:
    root = AgentSpec(name="Orchestrator", role="orchestrator", tools=("finish",))
    lead = AgentSpec(
        name="Lead", role="lead", parent_id=root.id, team_id="team_1", tools=("calculate",)
    )
    kept = AgentSpec(name="Kept", role="judge", parent_id=root.id, system_prompt="stored prompt")
    return Cohort(
        task=TASK,
        agents=(root, lead, kept),
        teams=(TeamSpec(id="team_1", lead_id=lead.id, name="Fares", pattern="pipeline"),),
    )


async def test_a_reflection_round_produces_the_refined_prompt() -> None:
    s = settings(reflection_rounds=1)
    m = ScriptedModel(responder=prompt_writer)
    meter = Meter()
    out = await PromptCreator(s, m, REGISTRY, prompts_for(s), meter).write_all(cohort())
    by_name = {a.name: a.system_prompt for a in out.agents}
    assert by_name == {
        "Orchestrator": "Refined prompt for Orchestrator.",
        "Lead": "Refined prompt for Lead.",
        "Kept": "stored prompt",  # an agent with a prompt (reused) is left alone
    }
    assert meter.calls == 6 == len(calls_of(m, "prompt_creator"))
    lead_calls = [r.messages[0].content or "" for r in m.requests if r.agent_id == out.agents[1].id]
    draft, critique, refine = lead_calls
    assert "Team: Fares (collaboration pattern: pipeline)" in draft
    assert "`calculate`" in draft and "Reports to: Orchestrator." in draft
    assert "Draft prompt for Lead." in critique
    assert "Critique of Lead: say when to finish." in refine


async def test_rounds_zero_keeps_the_draft_and_lgtm_ends_early() -> None:
    s = settings(reflection_rounds=0)
    m = ScriptedModel(responder=prompt_writer)
    out = await PromptCreator(s, m, REGISTRY, prompts_for(s)).write_all(cohort())
    assert out.agents[0].system_prompt == "Draft prompt for Orchestrator."
    assert len(m.requests) == 2

    s = settings(reflection_rounds=3)
    m = ScriptedModel().script("prompt_creator", Reply(content="v1"), Reply(content="LGTM."))
    spec = cohort().agents[0]
    assert await PromptCreator(s, m, REGISTRY, prompts_for(s)).write(cohort(), spec) == "v1"
    assert len(m.requests) == 2


async def test_writing_is_concurrent_within_the_bound() -> None:
    import asyncio

    active = peak = 0

    class Slow(ScriptedModel):
        async def complete(self, request):  # type: ignore[no-untyped-def]
            nonlocal active, peak
            active += 1
            peak = max(peak, active)
            await asyncio.sleep(0.01)
            active -= 1
            return await super().complete(request)

    agents = tuple(AgentSpec(name=f"A{i}", role="member") for i in range(6))
    s = settings(prompt_concurrency=2)
    m = Slow(responder=prompt_writer)
    await PromptCreator(s, m, REGISTRY, prompts_for(s)).write_all(Cohort(task=TASK, agents=agents))
    assert peak == 2 and len(m.requests) == 6
