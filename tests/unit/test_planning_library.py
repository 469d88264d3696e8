"""Planning with the agent library: stored cohorts proposed again, stored agents reused."""

from __future__ import annotations

from collections.abc import AsyncIterator

import fakeredis
import pytest

from core.config import LibrarySettings
from core.library import Library
from core.library.local_index import LocalIndex
from core.library.onnx_minilm import MiniLMEmbedder
from core.planning import plan
from core.types import AgentSpec, Cohort
from tests.planning_helpers import REGISTRY, as_json, calls_of, design, model, settings

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


async def test_a_well_rated_cohort_is_proposed_again_without_planning(library: Library) -> None:
    entry_id = await stored_cohort(library, good=True)
    m = model()  # only the router is scripted: any planning call would get a finish reply
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
    assert reused.mean_rating == 1.0 and reused.similarity >= 0.6 and reused.quality >= 0.6
    stored = (await library.get(entry_id)).cohort
    assert stored is not None and cohort.agents == stored.agents and cohort.id != stored.id
    assert not calls_of(m, "planner") and not calls_of(m, "prompt_creator")
    assert outcome.llm_calls == 1


async def test_a_badly_rated_cohort_is_not_proposed_again(library: Library) -> None:
    await stored_cohort(library, good=False)
    m = model(planner=(as_json(design()),))
    outcome = await plan(settings(), m, REGISTRY, PARAPHRASE, library=library)
    assert outcome.cohort is not None and not outcome.reused
    (request,) = calls_of(m, "planner")
    # The planner still sees it, with its poor record.
    text = request.messages[0].content or ""
    assert "Similar cohorts that ran before" in text and "3 runs, 0 successful" in text


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
