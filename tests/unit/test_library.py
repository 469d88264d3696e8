"""The agent library: save, find, names, track records and ranking by record."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest

from core.config import LibrarySettings
from core.errors import ConfigError
from core.library import EntryNotFoundError, Library, NameTakenError, TrackRecord, rank_score
from core.library._settings import library_dir
from core.library.factories import open_library
from core.library.hashing import HashingEmbedder
from core.library.local_index import LocalIndex
from core.library.onnx_minilm import MiniLMEmbedder
from core.types import AgentSpec
from core.types.cohort import Cohort
from tests.conftest import make_settings


def cohort(task: str) -> Cohort:
    return Cohort(task=task, agents=(AgentSpec(name="lead", role="orchestrator"),))


@pytest.fixture
async def redis() -> AsyncIterator[Any]:
    client = fakeredis.FakeAsyncRedis(decode_responses=True)
    yield client
    await client.aclose()


@pytest.fixture
def library(redis: Any) -> Library:
    embedder = HashingEmbedder()
    return Library(redis, LocalIndex(embedder.dim), embedder, LibrarySettings())


async def test_save_and_find_a_cohort_with_its_record(library: Library) -> None:
    saved = await library.save_cohort(cohort("summarise the quarterly sales report"))
    await library.save_cohort(cohort("plan a birthday party"))
    assert saved.record == TrackRecord() and saved.cohort is not None
    (best, *_) = await library.find_cohorts("summarise the sales report", top_k=2)
    assert best.entry.id == saved.id and best.entry.cohort == saved.cohort
    assert best.quality == pytest.approx(0.5) and best.score == pytest.approx(best.similarity)


async def test_agents_and_cohorts_are_searched_apart(library: Library) -> None:
    spec = AgentSpec(name="analyst", description="analyses sales data and writes reports")
    await library.save_agent(spec)
    await library.save_cohort(cohort("analyses sales data and writes reports"))
    agents = await library.find_agents("sales data analysis reports")
    assert [m.entry.kind for m in agents] == ["agent"]
    assert agents[0].entry.agent == spec


async def test_names_find_entries_and_are_not_stolen(library: Library) -> None:
    first = await library.save_cohort(cohort("weekly competitor prices"), name="prices")
    assert (await library.get_by_name("prices")).id == first.id
    other = cohort("daily competitor prices")
    with pytest.raises(NameTakenError) as taken:
        await library.save_cohort(other, name="prices")
    assert taken.value.entry_id == first.id
    await library.save_cohort(other, name="prices", replace=True)
    assert (await library.get_by_name("prices")).id == other.id
    assert (await library.get(first.id)).name is None
    await library.save_cohort(other, name="daily-prices")
    assert (await library.get_by_name("daily-prices")).id == other.id
    with pytest.raises(EntryNotFoundError):
        await library.get_by_name("prices")
    with pytest.raises(EntryNotFoundError):
        await library.get_by_name("nothing")


async def test_outcomes_and_feedback_update_the_record(library: Library) -> None:
    entry = await library.save_cohort(cohort("review a contract"))
    await library.record_run(entry.id, success=True)
    await library.record_run(entry.id, success=False)
    await library.record_decision(entry.id, approved=True)
    await library.record_feedback(entry.id, thumbs_up=True)
    record = await library.record_feedback(entry.id, stars=3)
    assert record == TrackRecord(
        runs=2, successes=1, approvals=1, rejections=0, ratings=2, rating_sum=1.5
    )
    assert record.mean_rating == 0.75
    with pytest.raises(EntryNotFoundError):
        await library.record_run("coh_missing", success=True)
    with pytest.raises(ValueError):
        await library.record_feedback(entry.id, stars=6)


async def test_delete_forgets_vector_record_and_name(library: Library) -> None:
    entry = await library.save_cohort(cohort("translate a manual"), name="translate")
    await library.delete(entry.id)
    assert await library.find_cohorts("translate a manual") == []
    with pytest.raises(EntryNotFoundError):
        await library.get_by_name("translate")


def test_ranking_formula_prior_and_direction() -> None:
    fresh = TrackRecord()
    good = TrackRecord(runs=3, successes=3, ratings=2, rating_sum=2.0)
    bad = TrackRecord(runs=2, ratings=2)
    assert fresh.quality() == 0.5 and rank_score(0.8, fresh.quality()) == pytest.approx(0.8)
    assert good.quality() > 0.8 > 0.2 > bad.quality()
    # A weaker match with a good record beats a closer one with a bad record.
    assert rank_score(0.7, good.quality()) > rank_score(0.8, bad.quality())
    # One bad rating does not bury a long good record.
    assert TrackRecord(runs=10, successes=10, ratings=1).quality() > 0.8


async def test_well_rated_cohort_is_found_again_for_a_paraphrase_badly_rated_is_not(
    redis: Any,
) -> None:
    embedder = MiniLMEmbedder()
    library = Library(redis, LocalIndex(embedder.dim), embedder, LibrarySettings())
    good = await library.save_cohort(cohort("Summarise the quarterly sales report for the board"))
    bad = await library.save_cohort(cohort("Write a summary of the quarterly sales report"))
    await library.save_cohort(cohort("Plan a three-day trip to Lisbon on a budget"))
    for _ in range(2):
        await library.record_run(good.id, success=True)
        await library.record_feedback(good.id, stars=5)
        await library.record_run(bad.id, success=False)
        await library.record_feedback(bad.id, thumbs_up=False)

    # The badly rated cohort is the closer match for this paraphrase, yet ranks below.
    recap = "Give the executives a short recap of this quarter's sales figures"
    matches = {m.entry.id: m for m in await library.find_cohorts(recap, top_k=3)}
    assert matches[bad.id].similarity > matches[good.id].similarity
    assert max(matches.values(), key=lambda m: m.score).entry.id == good.id

    paraphrase = "Give the board a summary of the sales report for this quarter"
    # Two stored cohorts this close to each other: not clear enough to reuse either as is
    # (library.reuse_margin); the planner is shown both with their records instead.
    assert await library.find_reusable_cohort(paraphrase) is None
    await library.delete(bad.id)
    reusable = await library.find_reusable_cohort(paraphrase)
    assert reusable is not None and reusable.entry.id == good.id
    assert reusable.entry.record.successes == 2
    # With only the badly rated cohort left, nothing is proposed for reuse.
    await library.delete(good.id)
    again = await library.save_cohort(cohort("Write a summary of the quarterly sales report"))
    for _ in range(2):
        await library.record_run(again.id, success=False)
    assert await library.find_reusable_cohort(paraphrase) is None


async def test_open_library_from_settings_persists_the_index(redis: Any, tmp_path: Path) -> None:
    settings = make_settings(library={"embedder": "hashing", "index_dir": str(tmp_path)})
    library = await open_library(settings, redis)
    entry = await library.save_cohort(cohort("clean the mailing list"), name="clean")
    await library.aclose()
    again = await open_library(settings, redis)
    (match,) = await again.find_cohorts("clean the mailing list")
    assert match.entry.id == entry.id and match.entry.name == "clean"
    assert (tmp_path / "items.json").is_file()


def test_library_settings_from_config_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CARAMBA_LIBRARY__BACKEND", "pinecone")
    monkeypatch.setenv("CARAMBA_LIBRARY__TOP_K", "9")
    settings = make_settings()
    assert settings.library.backend == "pinecone" and settings.library.top_k == 9
    assert settings.library.embedder == "onnx"
    assert library_dir(settings).is_absolute()
    monkeypatch.setenv("CARAMBA_LIBRARY__EMBEDDER", "word2vec")
    with pytest.raises(ConfigError, match=r"library\.embedder"):
        make_settings()
