"""The evaluation set of the agent library (tests/data/library_*.toml): its shape, and the
figures bench/library.py reports held as floors with the real ONNX MiniLM embedder and
the [library] settings of config.toml (one batched embedding pass, ≈ 5 s)."""

from __future__ import annotations

from collections import Counter

from core.library.onnx_minilm import MiniLMEmbedder
from tests.conftest import make_settings
from tests.library_eval import EvalSet, absent_ceiling, figures, search, stored_library

KINDS = {"paraphrase", "indirect", "near_miss", "absent", "partial"}


def test_the_set_is_big_varied_and_consistent() -> None:
    data = EvalSet.load()
    ids = [a["id"] for a in data.agents]
    assert len(ids) >= 80 and len(set(ids)) == len(ids)
    assert len(data.queries) >= 120
    assert len({q["q"] for q in data.queries}) == len(data.queries), "no query twice"
    for agent in data.agents:
        assert agent["task"] and agent["description"] and len(agent["prompt"]) > 200
    kinds = Counter(q["kind"] for q in data.queries)
    assert set(kinds) == KINDS and min(kinds.values()) >= 5
    for q in data.queries:
        assert q["expect"] in ("", *ids) and set(q.get("also", ())) <= set(ids)
        # Nobody stored the job: nothing may be reused; a bigger job: not as is.
        if q["kind"] in ("absent", "partial"):
            assert not q["direct"], q["q"]
        assert (q["expect"] == "") == (q["kind"] == "absent"), q["q"]
    # Near-misses ask for the other agent of a pair: each expected agent is stored.
    assert kinds["near_miss"] >= 15


async def test_reuse_figures_and_the_weighted_fields() -> None:
    """The configured scoring and threshold/margin, against the best field, the
    description alone (what the library did before) and the cosines without BM25, on one
    stored library."""
    data = EvalSet.load()
    configured = make_settings().library
    library = await stored_library(data, MiniLMEmbedder(), configured)
    outcomes = await search(library, data)
    f = figures(outcomes, configured)
    # bench/library.py: top1=0.852 r10=0.989 direct_right=7 direct_wrong=0 (A 0.885, B 0.823).
    assert f.top1 >= 0.845 and f.r10 >= 0.98
    assert f.direct_wrong == 0 and f.direct_right >= 6
    # The threshold holds on its own against jobs nobody stored (no runner-up needed).
    assert absent_ceiling(outcomes) < configured.reuse_threshold
    assert figures(outcomes, configured, "B").top1 >= 0.8, "the held-out half"
    for other in (
        configured.model_copy(update={"field_scoring": "max"}),
        configured.model_copy(update={"weight_prompt": 0.0, "weight_name": 0.0}),
    ):
        library.settings = other
        assert figures(await search(library, data), other).top1 < f.top1 - 0.03
    library.settings = configured.model_copy(update={"lexical_weight": 0.0})
    dense = await search(library, data)
    assert figures(dense, library.settings).top1 < f.top1
    assert absent_ceiling(dense) > absent_ceiling(outcomes) + 0.05
