"""The agent library: reuse on a hard evaluation set; the local index's query latency,
ingest rate and paraphrase top-1.

    .venv/bin/python bench/library.py [--reuse-only] [--calibrate] [--n 100000] ...

Last line: ``bench reuse: set=… top1=… r10=… direct_right=… direct_wrong=…``; the two
before it: the same for each half of the queries (``bench reuse A (tuning half)`` and
``bench reuse B (held-out half)``); before them (without --reuse-only):
``bench library: n=… query_p50_ms=… query_p99_ms=… ingest_per_s=… top1=…``.

* **bench reuse** — the evaluation set tests/data/library_{agents,queries}.toml (85 stored
  agents, many in near-miss pairs, and 207 chat-style requests: paraphrases, indirect
  asks, near-misses, jobs nobody stored, bigger jobs) through the Library with the ONNX
  MiniLM embedder and the ``[library]`` settings of config.toml (tests/library_eval.py):
  top1 / r10 = the expected agent first / in the first ten (``find_agents``);
  direct_right / direct_wrong = stored cohorts proposed as is (``find_reusable_cohort``)
  where that is right / wrong. Lines before it: the same with the library as it was before
  (description only, threshold 0.6, no margin), with other field scorings and with the
  embeddings alone (no BM25); top-1 per kind of request; the time of one ``find_agents``
  with and without the lexical re-rank. ``--tune`` tries ``lexical_weight`` from 0 to 0.6
  and chooses it on half A of the queries only (the best top-1 there; of tied values, the
  middle one), showing half B's top-1 beside it: what config.toml holds is that choice.
  ``--calibrate`` lists the (threshold, margin) pairs with no wrong direct reuse within
  0.02 of them. Goals: top1 ≥ 0.85, r10 ≥ 0.98, direct_wrong = 0.
* **top1** (bench library) — the paraphrase set of the tests (tests/data/paraphrases.toml,
  60 pairs): each task is stored, each paraphrase searched; the share whose own task
  comes first.
* **ingest_per_s** — texts per second through the whole write path: ONNX embedding of
  ``--sample`` generated task texts plus their upsert into the local index (including
  the write to disk). Embedding dominates (2 cores), so embedding 100,000 texts would
  take minutes: instead the sample's vectors are tiled, with small noise, up to ``--n``
  to fill the index (that fill is reported on its own line, as vectors per second).
* **query_p50_ms / query_p99_ms** — ``LocalIndex.query`` (top 5, exact cosine, no filter)
  on the index of ``--n`` items; the line before the last gives the same with the
  ``kind`` filter the library uses (half the items pass).
Goals: query_p50_ms ≤ 20, top1 ≥ 0.9.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.config import PROJECT_ROOT, LibrarySettings, load_settings
from core.library import Library
from core.library.index import IndexItem
from core.library.local_index import LocalIndex
from core.library.onnx_minilm import DIM, MiniLMEmbedder, embed_sync
from tests.library_eval import (
    EvalSet,
    absent_ceiling,
    calibrate,
    figures,
    half,
    search,
    stored_library,
)

PARAPHRASES = PROJECT_ROOT / "tests" / "data" / "paraphrases.toml"
KINDS = ("agent", "cohort")
CONTEXTS = [
    "for the finance team",
    "before Friday",
    "using last year's data",
    "in plain language",
    "with a short summary at the end",
    "for our Berlin office",
    "as a checklist",
    "and send it to the channel",
    "on a tight budget",
    "for a non-technical audience",
]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def load_pairs() -> list[tuple[str, str]]:
    return [(t, p) for t, p in tomllib.loads(PARAPHRASES.read_text())["pairs"]]


async def measure_top1(pairs: list[tuple[str, str]]) -> float:
    index = LocalIndex(DIM)
    tasks = embed_sync([t for t, _ in pairs])
    await index.upsert([IndexItem(str(i), v, {"kind": "cohort"}) for i, v in enumerate(tasks)])
    hits = 0
    for i, vector in enumerate(embed_sync([p for _, p in pairs])):
        (best,) = await index.query(vector, 1, {"kind": "cohort"})
        hits += best.id == str(i)
    return hits / len(pairs)


def sample_texts(pairs: list[tuple[str, str]], count: int, rng: random.Random) -> list[str]:
    pool = [text for pair in pairs for text in pair]
    return [f"{rng.choice(pool)} {rng.choice(CONTEXTS)} (#{i})" for i in range(count)]


async def tune(library: Library, data: EvalSet, settings: LibrarySettings) -> None:
    """Choose lexical_weight on half A; show half B's top-1 for each value beside it."""
    tried: list[tuple[float, float]] = []
    for step in range(13):
        weight = step / 20
        library.settings = settings.model_copy(update={"lexical_weight": weight})
        outcomes = await search(library, data)
        a, b = (figures(outcomes, library.settings, h) for h in "AB")
        print(f"tune: lexical_weight={weight:.2f} top1 A={a.top1:.3f} (B={b.top1:.3f})")
        tried.append((weight, a.top1))
    best = max(top1 for _, top1 in tried)
    tied = [weight for weight, top1 in tried if top1 == best]
    print(f"tune: chosen on half A: lexical_weight={tied[len(tied) // 2]:.2f} (A top1={best:.3f})")


async def find_ms(library: Library, data: EvalSet) -> float:
    """Median time of one find_agents (top 10) over the set's queries, embeddings cached."""
    times = []
    for query in data.queries:
        start = time.perf_counter()
        await library.find_agents(query["q"], top_k=10)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


async def reuse(calibrating: bool, tuning: bool) -> list[str]:
    """The evaluation set's figures; returns the ``bench reuse`` lines (halves, all)."""
    data = EvalSet.load()
    settings = load_settings().library
    library = await stored_library(data, MiniLMEmbedder(), settings)
    variants: list[tuple[str, LibrarySettings]] = [
        (
            "before (description only, threshold 0.6, no margin)",
            settings.model_copy(
                update={
                    "weight_prompt": 0.0,
                    "weight_name": 0.0,
                    "reuse_threshold": 0.6,
                    "reuse_margin": 0.0,
                    "lexical_weight": 0.0,
                }
            ),
        ),
        ("best field (max)", settings.model_copy(update={"field_scoring": "max"})),
        (
            "description only",
            settings.model_copy(update={"weight_prompt": 0.0, "weight_name": 0.0}),
        ),
        (
            "prompt only",
            settings.model_copy(update={"weight_description": 0.0, "weight_name": 0.0}),
        ),
        ("embeddings only (lexical_weight 0)", settings.model_copy(update={"lexical_weight": 0})),
    ]
    for label, tried in variants:
        library.settings = tried
        outcomes = await search(library, data)
        f, a, b = (figures(outcomes, tried, h) for h in (None, "A", "B"))
        print(
            f"reuse {label}: top1={f.top1:.3f} (A={a.top1:.3f} B={b.top1:.3f}) r10={f.r10:.3f} "
            f"direct_right={f.direct_right} direct_wrong={f.direct_wrong}"
        )
    dense_ms = await find_ms(library, data)
    if tuning:
        await tune(library, data, settings)
    library.settings = settings
    outcomes = await search(library, data)
    f = figures(outcomes, settings)
    weights = f"{settings.weight_description}/{settings.weight_prompt}/{settings.weight_name}"
    print(
        f"reuse as configured ({settings.field_scoring} {weights}, lexical_weight "
        f"{settings.lexical_weight}, threshold {settings.reuse_threshold}, margin "
        f"{settings.reuse_margin}): top1 by kind "
        + " ".join(f"{k}={v:.3f}" for k, v in f.by_kind.items())
        + f"; direct reuse right in {f.direct_right} of {f.direct_possible} where it would be"
    )
    print(
        f"rerank: find_agents p50_ms={await find_ms(library, data):.2f} with BM25, "
        f"{dense_ms:.2f} embeddings only ({len(data.agents)} entries; embeddings cached)"
    )
    if calibrating:
        print(f"calibrate: jobs nobody stored score up to {absent_ceiling(outcomes):.3f}")
        for right, threshold, margin in calibrate(outcomes, settings)[:15]:
            print(f"calibrate: threshold={threshold:.2f} margin={margin:.2f} right={right} wrong=0")
    lines = []
    for h, label in (("A", "tuning"), ("B", "held-out")):
        size = f"{len(data.agents)}x{sum(half(q) == h for q in data.queries)}"
        lines.append(figures(outcomes, settings, h).line(size, f"bench reuse {h} ({label} half)"))
    return [*lines, f.line(data.name)]


async def main(
    n: int, sample: int, queries: int, *, reuse_only: bool, calibrating: bool, tuning: bool
) -> None:
    reuse_lines = await reuse(calibrating, tuning)
    if reuse_only:
        print("\n".join(reuse_lines))
        return
    rng = random.Random(42)
    pairs = load_pairs()
    embed_sync(["warm-up"])  # load the model outside the timings
    top1 = await measure_top1(pairs)

    with tempfile.TemporaryDirectory() as tmp:
        index = await LocalIndex.open(Path(tmp), dim=DIM, autosave=False)
        texts = sample_texts(pairs, sample, rng)
        start = time.perf_counter()
        vectors = embed_sync(texts)
        await index.upsert(
            [IndexItem(f"s{i}", v, {"kind": KINDS[i % 2]}) for i, v in enumerate(vectors)]
        )
        await index.flush()
        ingest_per_s = sample / (time.perf_counter() - start)

        noise = np.random.default_rng(42)
        start = time.perf_counter()
        for first in range(sample, n, 10_000):
            count = min(10_000, n - first)
            base = vectors[np.arange(first, first + count) % sample]
            tiled = base + noise.normal(scale=0.05, size=base.shape).astype(np.float32)
            await index.upsert(
                [IndexItem(f"t{first + j}", tiled[j], {"kind": KINDS[j % 2]}) for j in range(count)]
            )
        fill_s = time.perf_counter() - start
        start = time.perf_counter()
        await index.flush()
        flush_s = time.perf_counter() - start
        size = await index.count()
        print(f"ingest: embedded and stored {sample} texts at {ingest_per_s:.0f} texts/s")
        print(
            f"filled to n={size}: {(size - sample) / fill_s:.0f} vectors/s (tiled), "
            f"write to disk {flush_s:.2f} s"
        )

        probes = embed_sync([p for _, p in pairs])
        plain: list[float] = []
        filtered: list[float] = []
        for i in range(queries):
            vector = probes[i % len(probes)]
            t0 = time.perf_counter()
            await index.query(vector, 5)
            t1 = time.perf_counter()
            await index.query(vector, 5, {"kind": "cohort"})
            t2 = time.perf_counter()
            plain.append((t1 - t0) * 1000)
            filtered.append((t2 - t1) * 1000)
    print(
        f"with kind filter: query_p50_ms={statistics.median(filtered):.2f} "
        f"query_p99_ms={pct(filtered, 0.99):.2f}"
    )
    print(
        f"bench library: n={size} query_p50_ms={statistics.median(plain):.2f} "
        f"query_p99_ms={pct(plain, 0.99):.2f} ingest_per_s={ingest_per_s:.0f} top1={top1:.3f}"
    )
    print("\n".join(reuse_lines))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--sample", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--reuse-only", action="store_true", help="only the evaluation set")
    parser.add_argument("--calibrate", action="store_true", help="list threshold/margin pairs")
    parser.add_argument("--tune", action="store_true", help="choose lexical_weight on half A")
    args = parser.parse_args()
    asyncio.run(
        main(
            args.n,
            args.sample,
            args.queries,
            reuse_only=args.reuse_only,
            calibrating=args.calibrate,
            tuning=args.tune,
        )
    )
