"""The library's lexical score: terms, BM25 as a share, its statistics in Redis kept exact
through saves, replacements and deletes, the fusion with the cosines, the rebuild of an
older library, and the Pinecone backend re-ranked the same way."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest

from core.config import LibrarySettings
from core.library import Library
from core.library.fields import combine
from core.library.hashing import HashingEmbedder
from core.library.lexical import BM25, VERSION, FieldStats, term_counts, terms
from core.library.local_index import LocalIndex
from core.library.pinecone_index import PineconeIndex
from core.library.search import fuse
from core.library.upgrade import ensure_lexical
from core.process.embedded_library import load_library, save_library
from core.state.keys import Keys
from core.state.store import Store
from core.types import AgentSpec
from tests.conftest import make_settings
from tests.fakes.pinecone_server import FakePinecone

RECONCILER = AgentSpec(
    name="Bank reconciler",
    description="Reconciles bank statements with the ledger",
    system_prompt="Match each bank transaction to a ledger posting; list unmatched items.",
    tools=("read_file",),
)
AUDITOR = AgentSpec(
    name="Expense auditor",
    description="Audits employee expense claims against the travel policy",
    system_prompt="Check every expense claim for a receipt and the policy's limits.",
    tools=("read_file",),
)


@pytest.fixture
async def redis() -> AsyncIterator[Any]:
    client = fakeredis.FakeAsyncRedis(decode_responses=True)
    yield client
    await client.aclose()


def _library(redis: Any, **settings: Any) -> Library:
    embedder = HashingEmbedder()
    return Library(redis, LocalIndex(embedder.dim), embedder, LibrarySettings(**settings))


def test_terms_are_stemmed_words_without_stop_words_or_single_characters() -> None:
    assert terms("The team's bank reconciliations, via read_file!") == [
        "team",
        "bank",
        "reconcili",
        "via",
        "read",
        "file",
    ]
    assert terms("reconciles") == terms("reconciled") == ["reconcil"]
    assert terms("can you please do it for me?") == []
    assert term_counts("audit audits the audit") == {"audit": 3}


def test_bm25_is_the_share_of_the_query_a_field_holds() -> None:
    stats = FieldStats(docs=10, length=100, df={"bank": 1, "report": 8})
    query = BM25(["bank", "report"], stats)
    both, rare, common = query({"bank": 1, "report": 1}), query({"bank": 1}), query({"report": 1})
    assert 0 < common < rare < both < 1, "a rare word weighs more than a common one"
    assert both < query({"bank": 3, "report": 3}) < 1, "more occurrences, up to the bound"
    assert query({}) == 0.0
    # A query word no entry holds is part of the query too: the same field holds less of it.
    assert BM25(["bank", "report", "zebra"], stats)({"bank": 1, "report": 1}) < both
    assert BM25([], stats)({"bank": 1}) == 0.0
    assert BM25(["bank"], FieldStats(0, 0, {}))({"bank": 1}) == 0.0, "an empty library"


async def test_statistics_follow_saves_replacements_and_deletes(redis: Any) -> None:
    library = _library(redis)

    async def stats(*words: str) -> tuple[int, int, dict[str, int]]:
        s = (await library.lexical.stats("agent", list(words)))["prompt"]
        return s.docs, s.length, dict(s.df)

    first = await library.save_agent(RECONCILER)
    await library.save_agent(AUDITOR)
    docs, length, df = await stats("bank", "receipt", "ledger")
    assert docs == 2 and df == {"bank": 1, "receipt": 1, "ledger": 1}
    assert length == sum(len(terms(a.system_prompt)) for a in (RECONCILER, AUDITOR))
    # Saved again with another prompt: the old terms no longer count.
    changed = RECONCILER.model_copy(update={"system_prompt": "Explain every receipt."})
    await library.save_agent(changed)
    docs, _, df = await stats("bank", "receipt", "ledger")
    assert docs == 2 and df == {"bank": 0, "receipt": 2, "ledger": 0}
    await library.delete(first.id)
    docs, length, df = await stats("receipt")
    assert docs == 1 and df == {"receipt": 1}
    assert length == len(terms(AUDITOR.system_prompt))
    cohorts = await library.lexical.stats("cohort", ["receipt"])
    assert cohorts["prompt"].docs == 0, "each kind has its own statistics"


async def test_similarity_fuses_cosines_and_bm25_by_lexical_weight(redis: Any) -> None:
    library = _library(redis, lexical_weight=0.4)
    await library.save_agent(RECONCILER)
    await library.save_agent(AUDITOR)
    best, other = await library.find_agents("reconcile bank statements with the ledger", 2)
    assert best.entry.agent == RECONCILER and best.lexical["description"] > 0
    assert other.lexical == {"description": 0.0, "prompt": 0.0, "name": 0.0}
    for match in (best, other):
        dense = combine(match.fields, library.settings)  # type: ignore[arg-type]
        lexical = combine(match.lexical, library.settings)  # type: ignore[arg-type]
        assert match.similarity == pytest.approx(0.6 * dense + 0.4 * lexical)
        assert match.similarity == pytest.approx(fuse(dense, lexical, library.settings))
    # lexical_weight 0: the cosines alone, no statistics read.
    library.settings = LibrarySettings(lexical_weight=0.0)
    plain, _ = await library.find_agents("reconcile bank statements with the ledger", 2)
    assert plain.lexical == {} and plain.similarity == pytest.approx(
        combine(plain.fields, library.settings)  # type: ignore[arg-type]
    )


async def test_bm25_breaks_a_near_tie_of_the_cosines(redis: Any) -> None:
    """Two entries the embedder cannot tell apart for a request: the one holding the
    request's rare words comes first with the lexical score, either one without it."""
    library = _library(redis, lexical_weight=0.3)
    twin = AUDITOR.model_copy(
        update={"id": "agt_twin", "description": "Audits employee claims for ledger entries"}
    )
    await library.save_agent(AUDITOR)
    await library.save_agent(twin)
    (best, runner_up) = await library.find_agents("expense travel policy", top_k=2)
    assert best.entry.id == AUDITOR.id
    assert best.similarity > runner_up.similarity


async def test_an_older_library_gets_its_terms_counted_once(redis: Any) -> None:
    library = _library(redis)
    entry = await library.save_agent(RECONCILER)
    # An entry saved before the lexical score has no terms: until the library is upgraded
    # (statistics from entries that have them), it is scored on its texts.
    await redis.hdel(library.entry_key(entry.id), "terms")
    (before,) = await library.find_agents("bank ledger", top_k=1)
    assert before.lexical["prompt"] > 0
    # A library of before the lexical score: no terms, no statistics, no version.
    await library.lexical.clear()
    assert await ensure_lexical(library) == 1
    assert await redis.hget(library.entry_key(entry.id), "terms")
    assert await redis.get(library.lexical.version_key) == VERSION
    assert (await library.lexical.stats("agent", ["bank"]))["prompt"].df == {"bank": 1}
    (after,) = await library.find_agents("bank ledger", top_k=1)
    assert after.lexical == pytest.approx(before.lexical)
    assert await ensure_lexical(library) == 0, "done once"


async def test_pinecone_results_are_re_ranked_the_same_way(
    redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = HashingEmbedder(dim=64)
    async with FakePinecone(64) as fake:
        index = await PineconeIndex.connect(
            api_key="test-key", index_name="lib", namespace="ns", host=fake.host
        )
        library = Library(redis, index, embedder, LibrarySettings(lexical_weight=0.3))
        await library.save_agent(RECONCILER)
        await library.save_agent(AUDITOR)
        best, _ = await library.find_agents("audit the expense claims", top_k=2)
        assert best.entry.agent == AUDITOR and best.lexical["prompt"] > 0
        await library.aclose()


async def test_embedded_mode_keeps_the_statistics_between_processes(
    redis: Any, tmp_path: Path
) -> None:
    settings = make_settings(library={"index_dir": str(tmp_path), "embedder": "hashing"})
    library = _library(redis)
    await library.save_agent(RECONCILER)
    before = await library.lexical.stats("agent", ["bank"])
    keys = Keys(settings.redis.key_prefix)
    await save_library(settings, Store(redis, keys, 1000))
    fresh = fakeredis.FakeAsyncRedis(decode_responses=True)
    await load_library(settings, Store(fresh, keys, 1000))
    again = _library(fresh)
    assert await again.lexical.stats("agent", ["bank"]) == before
    assert before["prompt"].df == {"bank": 1}
    assert await ensure_lexical(again) == 1, "no version kept: counted again, the same"
    assert await again.lexical.stats("agent", ["bank"]) == before
    await fresh.aclose()
