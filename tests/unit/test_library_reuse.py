"""Reuse that works: fields embedded apart and scored together, direct reuse only when
the best match is clearly ahead, ratings shown in stars, an old index re-embedded."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest

from core.config import LibrarySettings
from core.library import Library, LibraryMatch, TrackRecord
from core.library.factories import open_library
from core.library.fields import Field, agent_fields, cohort_fields, combine
from core.library.hashing import HashingEmbedder
from core.library.index import IndexItem
from core.library.local_index import LocalIndex
from core.library.records import LibraryEntry, pick_reusable, rated_down
from core.library.search import fuse
from core.library.upgrade import FORMAT, ensure_format
from core.types import AgentSpec, Cohort
from tests.conftest import make_settings

BASE = ("send_message", "roster", "wait_for_messages", "finish")
ANALYST = AgentSpec(
    name="Churn analyst",
    role="member",
    description="Finds why customers cancel",
    system_prompt="Compare the usage of customers who left with those who stayed.",
    tools=("run_python", *BASE),
)


@pytest.fixture
async def redis() -> AsyncIterator[Any]:
    client = fakeredis.FakeAsyncRedis(decode_responses=True)
    yield client
    await client.aclose()


def test_each_field_has_its_own_text_without_the_tools_every_agent_has() -> None:
    fields = agent_fields(ANALYST, BASE)
    assert fields == {
        "description": "Finds why customers cancel",
        "prompt": ANALYST.system_prompt,
        "name": "Churn analyst (member): run_python",
    }
    bare = agent_fields(AgentSpec(name="Helper", system_prompt="Answer questions."))
    assert bare["description"] == "Helper: Answer questions." and bare["name"] == "Helper (solo)"
    cohort = Cohort(task="Why do customers leave?", agents=(ANALYST,))
    fields = cohort_fields(cohort, BASE)
    assert fields["description"] == "Why do customers leave?"
    assert fields["prompt"].startswith("Churn analyst: Finds why customers cancel Compare")
    lone = Cohort(task="Plan a party", agents=(AgentSpec(name="lead", role="orchestrator"),))
    assert cohort_fields(lone)["prompt"] == "Plan a party"  # no agent text: the task


def test_weighted_or_best_field() -> None:
    scores: dict[Field, float] = {"description": 0.6, "prompt": 0.3, "name": 0.1}
    weighted = LibrarySettings(weight_description=3, weight_prompt=6, weight_name=1)
    assert combine(scores, weighted) == pytest.approx(0.37)  # weights are normalised
    assert combine(scores, LibrarySettings(field_scoring="max")) == 0.6
    with pytest.raises(ValueError, match="weight"):
        LibrarySettings(weight_description=0, weight_prompt=0, weight_name=0)


def _match(similarity: float, quality: float = 0.7) -> LibraryMatch:
    entry = LibraryEntry(id=f"coh_{similarity}", kind="cohort", text="t")
    return LibraryMatch(entry=entry, similarity=similarity, quality=quality, score=similarity)


def test_direct_reuse_needs_the_threshold_a_lead_over_the_runner_up_and_a_record() -> None:
    s = LibrarySettings(reuse_threshold=0.55, reuse_margin=0.18, reuse_min_quality=0.6)
    assert pick_reusable([_match(0.7), _match(0.4)], s) is not None
    assert pick_reusable([_match(0.7)], s) is not None, "no runner-up"
    assert pick_reusable([_match(0.7), _match(0.6)], s) is None, "a near-miss close behind"
    assert pick_reusable([_match(0.5), _match(0.1)], s) is None, "not similar enough"
    assert pick_reusable([_match(0.7, quality=0.5), _match(0.1)], s) is None, "no record"
    assert pick_reusable([], s) is None


def test_ratings_in_stars_and_which_count_as_down() -> None:
    assert TrackRecord(ratings=1, rating_sum=1.0).mean_stars == 5.0  # a 5-star rating
    assert TrackRecord(ratings=2, rating_sum=0.75).mean_stars == pytest.approx(2.5)
    assert TrackRecord().mean_stars is None
    assert rated_down(thumbs_up=False) and rated_down(stars=2)
    assert not rated_down(thumbs_up=True) and not rated_down(stars=3)


async def test_search_scores_each_field_and_keeps_the_scores(redis: Any) -> None:
    embedder = HashingEmbedder()
    library = Library(redis, LocalIndex(embedder.dim), embedder, LibrarySettings())
    entry = await library.save_agent(ANALYST)
    await library.save_agent(AgentSpec(name="Tripper", description="plans holidays in Lisbon"))
    assert await library.index.count() == 6, "three vectors per entry"
    (best, _) = await library.find_agents("customers cancel usage stayed", top_k=2)
    assert best.entry.id == entry.id and set(best.fields) == {"description", "prompt", "name"}
    assert set(best.lexical) == set(best.fields) and best.lexical["prompt"] > 0
    dense = combine(best.fields, library.settings)  # type: ignore[arg-type]
    lexical = combine(best.lexical, library.settings)  # type: ignore[arg-type]
    assert best.similarity == pytest.approx(fuse(dense, lexical, library.settings))
    await library.delete(entry.id)
    assert await library.index.count() == 3


async def test_an_index_of_the_old_format_is_re_embedded(redis: Any, tmp_path: Path) -> None:
    settings = make_settings(library={"embedder": "hashing", "index_dir": str(tmp_path)})
    embedder = HashingEmbedder()
    # What the library of issue 5 left: one vector per entry, under the entry's id.
    old = await LocalIndex.open(tmp_path, embedder.dim)
    cohort = Cohort(task="clean the mailing list", agents=(ANALYST,))
    key = f"{settings.redis.key_prefix}:library:entry:{cohort.id}"
    await redis.hset(
        key, mapping={"kind": "cohort", "text": cohort.task, "payload": cohort.model_dump_json()}
    )
    await old.upsert([IndexItem(cohort.id, embedder.embed_one(cohort.task), {"kind": "cohort"})])
    await old.aclose()

    library = await open_library(settings, redis)
    (match,) = await library.find_cohorts("clean the mailing list")
    assert match.entry.id == cohort.id and match.fields["description"] == pytest.approx(1.0)
    assert await library.index.count() == 3, "the old vector is gone, one per field instead"
    assert await redis.get(f"{library.prefix}:format") == FORMAT
    assert await ensure_format(library) == 0, "done once"
    await library.aclose()
