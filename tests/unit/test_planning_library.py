"""Planning with the agent library: stored cohorts proposed again, stored agents reused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import fakeredis
import pytest

from core.config import LibrarySettings
from core.library import Library
from core.library.local_index import LocalIndex
from core.library.onnx_minilm import MiniLMEmbedder
from core.llm.scripted import Reply, ScriptedModel
from core.planning import PromptCreator, plan
from core.runs.approval import view
from core.types import AgentSpec, Cohort
from core.types.run import RunState
from tests.planning_helpers import (
    REGISTRY,
    as_json,
    calls_of,
    design,
    model,
    prompt_writer,
    prompts_for,
    settings,
)

STORED_TASK = "Summarise the quarterly sales report for the board"
PARAPHRASE = "Write a short summary of the sales figures of the last quarter for the board members"


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture
async def library(embedder: MiniLMEmbedder) -> AsyncIterator[Library]:
    redis = fakeredis.FakeAsyncRedis(decode_responses=True)
    yield Library(redis, LocalIndex(embedder.dim), embedder, LibrarySettings())
    await redis.aclose()


def board_cohort() -> Cohort:
    """A cohort as a run for STORED_TASK would have kept it (its prompts written)."""
    lead = AgentSpec(
        name="Coordinator",
        role="orchestrator",
        description="Coordinates the quarterly sales summary for the board",
        system_prompt="Ask the analyst for the quarter's sales figures, check them, and "
        "hand the board a one-page summary of the quarterly sales report.",
    )
    analyst = AgentSpec(
        name="Sales analyst",
        role="member",
        parent_id=lead.id,
        description="Reads the quarterly sales report and summarises the figures",
        system_prompt="Read the quarterly sales report: revenue, units and growth by region "
        "against last quarter. Summarise the figures for the board in five bullet points.",
        tools=("read_file", "calculate"),
    )
    return Cohort(task=STORED_TASK, agents=(lead, analyst))


async def stored_cohort(library: Library, *, good: bool) -> str:
    entry = await library.save_cohort(board_cohort(), name="board summary")
    for _ in range(3):
        await library.record_run(entry.id, success=good)
    await library.record_feedback(entry.id, thumbs_up=good)
    return entry.id


def adapting_model() -> ScriptedModel:
    """The planning model, whose prompt creator also answers adaptation requests."""
    m = model()

    def respond(request: Any) -> Reply:
        text = request.messages[-1].content or ""
        if "comes from the library" in text:
            name = text.split("The agent: ", 1)[1].split(",", 1)[0]
            return Reply(content=f"Adapted prompt for {name}.")
        return prompt_writer(request)

    m.responder = respond
    return m


async def test_a_clear_well_rated_match_is_proposed_again_with_its_briefs_rewritten(
    library: Library,
) -> None:
    entry_id = await stored_cohort(library, good=True)
    m = adapting_model()
    outcome = await plan(settings(), m, REGISTRY, PARAPHRASE, library=library)
    assert outcome.path == "plan" and outcome.reused
    cohort = outcome.cohort
    assert cohort is not None and cohort.task == PARAPHRASE
    reused = cohort.reused_from
    assert reused is not None and reused.entry_id == entry_id and reused.kind == "cohort"
    assert (reused.name, reused.runs, reused.successes, reused.ratings) == (
        "board summary",
        3,
        3,
        1,
    )
    threshold = library.settings.reuse_threshold
    assert reused.similarity >= threshold and reused.quality >= 0.6 and reused.task == STORED_TASK
    # Rated 5 stars once: the card says so (it said "rated 1.0/5").
    assert reused.mean_rating == 5.0
    run = RunState(id="run_1", task=PARAPHRASE, cohort=cohort)
    card = view(settings(), run)
    assert card.reused_from is not None and "rated 5.0/5 (1×)" in card.reused_from
    # No planner call; one call per agent rewrote its brief for the new task, given the
    # stored brief and the task it was written for.
    stored = (await library.get(entry_id)).cohort
    assert stored is not None and not calls_of(m, "planner")
    adapt_calls = calls_of(m, "prompt_creator")
    assert len(adapt_calls) == len(stored.agents) and outcome.llm_calls == 1 + len(stored.agents)
    for request, old in zip(adapt_calls, stored.agents, strict=True):
        text = request.messages[0].content or ""
        assert old.system_prompt in text and STORED_TASK in text and PARAPHRASE in text
    assert [a.system_prompt for a in cohort.agents] == [
        f"Adapted prompt for {a.name}." for a in stored.agents
    ]
    assert [a.id for a in cohort.agents] == [a.id for a in stored.agents]
    assert cohort.id != stored.id


async def test_without_an_answer_the_old_task_is_replaced_in_every_brief() -> None:
    lead = (
        board_cohort()
        .agents[0]
        .model_copy(update={"system_prompt": f"Deliver: {STORED_TASK}. Keep it short."})
    )
    cohort = Cohort(task=PARAPHRASE, agents=(lead,))
    m = ScriptedModel(responder=lambda r: Reply(content=""))
    creator = PromptCreator(settings(), m, REGISTRY, prompts_for(settings()))
    text = await creator.adapt(cohort, lead, STORED_TASK)
    assert text == f"The task now: {PARAPHRASE}\n\nDeliver: {PARAPHRASE}. Keep it short."


async def test_a_badly_rated_cohort_is_not_proposed_again(library: Library) -> None:
    await stored_cohort(library, good=False)
    m = model(planner=(as_json(design()),))
    outcome = await plan(settings(), m, REGISTRY, PARAPHRASE, library=library)
    assert outcome.cohort is not None and not outcome.reused
    (request,) = calls_of(m, "planner")
    # The planner still sees it, with its poor record.
    text = request.messages[0].content or ""
    assert "From the library" in text and "3 runs, 0 successful" in text
    assert "rated 1.0/5 by 1" in text  # one thumbs down


async def test_the_planner_may_reuse_a_stored_agent(library: Library) -> None:
    analyst = AgentSpec(
        name="Sales analyst",
        role="member",
        description="Reads quarterly sales figures and summarises them for executives",
        system_prompt="You are the stored analyst prompt.",
        tools=("calculate",),
    )
    entry = await library.save_agent(analyst)
    await library.record_run(entry.id, success=True)
    d = design()
    d["agents"][2].update(reuse=entry.id, tools=[])
    m = model(planner=(as_json(d),))
    outcome = await plan(settings(), m, REGISTRY, PARAPHRASE, library=library)
    assert outcome.cohort is not None
    text = calls_of(m, "planner")[0].messages[0].content or ""
    assert f"id `{entry.id}`" in text and "Stored agents you may reuse" in text
    scout = next(a for a in outcome.cohort.agents if a.name == "Scout A")
    assert scout.system_prompt == "You are the stored analyst prompt."
    assert scout.tools[0] == "calculate"
    (reused,) = outcome.cohort.reused
    assert (reused.entry_id, reused.agent_id, reused.runs) == (entry.id, scout.id, 1)
    assert outcome.cohort.reused_agent_ids == (scout.id,)
    # The stored prompt is kept: the prompt creator wrote only the other four.
    assert len(calls_of(m, "prompt_creator")) == 4
