"""The agent library's local index and ONNX embedder: query latency, ingest rate, top-1.

    .venv/bin/python bench/library.py [--n 100000] [--sample 2000] [--queries 300]

Last line: ``bench library: n=… query_p50_ms=… query_p99_ms=… ingest_per_s=… top1=…``

* **top1** — the paraphrase set of the tests (tests/data/paraphrases.toml, 60 pairs): each
  task is stored, each paraphrase searched; the share whose own task comes first.
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
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np

from core.config import PROJECT_ROOT
from core.library.index import IndexItem
from core.library.local_index import LocalIndex
from core.library.onnx_minilm import DIM, embed_sync

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


async def main(n: int, sample: int, queries: int) -> None:
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


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--sample", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    asyncio.run(main(args.n, args.sample, args.queries))
