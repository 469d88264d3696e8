"""The agent-library evaluation set (tests/data/library_*.toml) run through the Library.

Each stored agent is saved twice, as the product would have kept it after a run that went
well: as an agent (found by its description, prompt, name and tools) and as the one-agent
cohort of that run (found by the run's task and the agent), with one successful run on
record. Each query is then searched:

* **top1 / r10** — ``find_agents``: the expected agent first / among the first ten
  (queries whose job nobody stored are left out; for a partial ask, top-1 may also be one
  of the other agents it needs);
* **direct** — ``find_reusable_cohort``: a cohort proposed as is. Right when the query
  says direct reuse is right and the cohort is the expected agent's; wrong otherwise.

The queries fall in two fixed halves by a hash of their text (:func:`half`): settings are
chosen on half A ("tuning") and half B is held out, so its figures show whether a choice
generalises or only fits the set.

Used by bench/library.py (the figures) and tests/unit/test_library_eval.py (the floor).
"""

from __future__ import annotations

import hashlib
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fakeredis

from core.config import LibrarySettings
from core.library import Embedder, Library, LibraryMatch
from core.library.local_index import LocalIndex
from core.library.records import pick_reusable
from core.types import AgentSpec, Cohort

DATA = Path(__file__).parent / "data"


@dataclass(frozen=True)
class EvalSet:
    agents: list[dict[str, Any]]
    queries: list[dict[str, Any]]

    @classmethod
    def load(cls) -> EvalSet:
        agents = tomllib.loads((DATA / "library_agents.toml").read_text())["agents"]
        queries = tomllib.loads((DATA / "library_queries.toml").read_text())["queries"]
        return cls(agents, queries)

    @property
    def name(self) -> str:
        return f"{len(self.agents)}x{len(self.queries)}"


def spec(agent: dict[str, Any]) -> AgentSpec:
    return AgentSpec(
        id=f"agt-{agent['id']}",
        name=agent["name"],
        role=agent["role"],
        tools=tuple(agent["tools"]),
        description=agent["description"],
        system_prompt=" ".join(agent["prompt"].split()),
    )


@dataclass
class Outcome:
    """What one query found."""

    query: dict[str, Any]
    agents: list[str]
    cohorts: list[LibraryMatch]
    reused: str | None = None


@dataclass
class Figures:
    top1: float
    r10: float
    direct_right: int
    direct_wrong: int
    direct_possible: int
    by_kind: dict[str, float] = field(default_factory=dict)

    def line(self, name: str, label: str = "bench reuse") -> str:
        return (
            f"{label}: set={name} top1={self.top1:.3f} r10={self.r10:.3f} "
            f"direct_right={self.direct_right} direct_wrong={self.direct_wrong}"
        )


class Primed:
    """An embedder that embeds everything it will be asked for in one batch first (the
    same vectors, several times faster than one call per entry and query)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.cache: dict[str, list[float]] = {}

    @property
    def dim(self) -> int:
        return self.inner.dim

    async def prime(self, texts: list[str]) -> None:
        todo = list(dict.fromkeys(t for t in texts if t not in self.cache))
        self.cache.update(zip(todo, await self.inner.embed(todo), strict=True))

    async def embed(self, texts: list[str]) -> list[list[float]]:
        await self.prime(texts)
        return [self.cache[t] for t in texts]


async def stored_library(data: EvalSet, embedder: Embedder, settings: LibrarySettings) -> Library:
    """A library on fakeredis and a memory index holding the set's agents and cohorts."""
    redis = fakeredis.FakeAsyncRedis(decode_responses=True)
    primed = Primed(embedder)
    library = Library(redis, LocalIndex(embedder.dim), primed, settings)
    specs = [spec(agent) for agent in data.agents]
    cohorts = [
        Cohort(id=f"coh-{agent['id']}", task=agent["task"], agents=(one,))
        for agent, one in zip(data.agents, specs, strict=True)
    ]
    items: list[AgentSpec | Cohort] = [*specs, *cohorts]
    await primed.prime(
        [t for item in items for t in library.fields_of(item).values()]
        + [q["q"] for q in data.queries]
    )
    for one, cohort in zip(specs, cohorts, strict=True):
        await library.save_agent(one)
        await library.save_cohort(cohort)
        await library.record_run(cohort.id, success=True)
    return library


async def search(library: Library, data: EvalSet) -> list[Outcome]:
    outcomes = []
    for query in data.queries:
        agents = await library.find_agents(query["q"], top_k=10)
        cohorts = await library.find_cohorts(query["q"])
        outcomes.append(
            Outcome(
                query=query,
                agents=[m.entry.id.removeprefix("agt-") for m in agents],
                cohorts=cohorts,
            )
        )
    return outcomes


def half(query: dict[str, Any]) -> str:
    """The query's half, "A" or "B": fixed by the first byte of the SHA-256 of its text."""
    return "AB"[hashlib.sha256(query["q"].encode()).digest()[0] % 2]


def figures(outcomes: list[Outcome], settings: LibrarySettings, only: str | None = None) -> Figures:
    """top1, r10 and direct reuse right / wrong under ``settings``' threshold and margin;
    of the queries of one half (``only`` "A" / "B") or all."""
    hits: list[bool] = []
    tens: list[bool] = []
    kinds: Counter[str] = Counter()
    kind_hits: Counter[str] = Counter()
    right = wrong = possible = 0
    for o in outcomes:
        if only is not None and half(o.query) != only:
            continue
        q = o.query
        if q["expect"]:
            good = {q["expect"], *q.get("also", ())}
            hit = bool(o.agents) and o.agents[0] in good
            hits.append(hit)
            tens.append(q["expect"] in o.agents[:10])
            kinds[q["kind"]] += 1
            kind_hits[q["kind"]] += hit
        match = pick_reusable(o.cohorts, settings)
        o.reused = match.entry.id.removeprefix("coh-") if match else None
        possible += bool(q["direct"])
        if o.reused is not None:
            if q["direct"] and o.reused == q["expect"]:
                right += 1
            else:
                wrong += 1
    return Figures(
        top1=sum(hits) / len(hits),
        r10=sum(tens) / len(tens),
        direct_right=right,
        direct_wrong=wrong,
        direct_possible=possible,
        by_kind={k: kind_hits[k] / n for k, n in sorted(kinds.items())},
    )


def absent_ceiling(outcomes: list[Outcome]) -> float:
    """The highest similarity the best cohort reaches for a job nobody stored."""
    return max(
        (o.cohorts[0].similarity for o in outcomes if not o.query["expect"] and o.cohorts),
        default=0.0,
    )


def calibrate(outcomes: list[Outcome], settings: LibrarySettings) -> list[tuple[int, float, float]]:
    """(right, threshold, margin) of the grid points (steps of 0.01) with no wrong direct
    reuse anywhere within 0.02 of them, most right first: a point on the edge of a wrong
    one is not kept, so the values chosen do not hang on one query. Thresholds start above
    :func:`absent_ceiling`: a library of a few entries has no close runner-up, so the
    threshold must hold on its own against requests for a job nobody stored."""
    wrong: dict[tuple[int, int], int] = {}
    right: dict[tuple[int, int], int] = {}
    for t in range(10, 86):
        for m in range(0, 36):
            tried = settings.model_copy(
                update={"reuse_threshold": t / 100, "reuse_margin": m / 100}
            )
            f = figures(outcomes, tried)
            wrong[t, m], right[t, m] = f.direct_wrong, f.direct_right
    lowest = max(int(absent_ceiling(outcomes) * 100) + 1, 12)
    safe = [
        (right[t, m], t / 100, m / 100)
        for t in range(lowest, 84)
        for m in range(2, 34)
        if all(wrong[t + i, m + j] == 0 for i in range(-2, 3) for j in range(-2, 3))
    ]
    safe.sort(key=lambda g: (-g[0], g[1], g[2]))
    return safe
