"""The planner: a cohort for a task, designed by the model or reused from the library."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.config import Settings
from core.library import Library, LibraryMatch
from core.llm.base import LLM, LLMRequest
from core.planning.design import CohortDesign, DesignRules, design_problems, to_cohort
from core.planning.structured import Meter, ask_structured
from core.prompts import PromptLibrary
from core.tools.catalogue import catalogue
from core.tools.registry import ToolRegistry
from core.types._base import new_id
from core.types.chat import ChatMessage
from core.types.cohort import Cohort, ReusedEntry
from core.types.files import AttachedFile


def reused_entry(match: LibraryMatch) -> ReusedEntry:
    """A library match as the proposal shows it: what it is and how it did."""
    entry, record = match.entry, match.entry.record
    return ReusedEntry(
        entry_id=entry.id,
        kind=entry.kind,
        name=entry.name,
        similarity=match.similarity,
        quality=match.quality,
        runs=record.runs,
        successes=record.successes,
        approvals=record.approvals,
        rejections=record.rejections,
        ratings=record.ratings,
        mean_rating=record.mean_rating,
    )


def pattern_names(prompts: PromptLibrary) -> frozenset[str]:
    """The collaboration patterns: the templates under patterns/ (core/prompts/)."""
    return frozenset(
        n.removeprefix("patterns/").removesuffix(".md.j2")
        for n in prompts.names()
        if n.startswith("patterns/") and n.endswith(".md.j2")
    )


@dataclass(frozen=True)
class LibraryContext:
    """What the planner is shown from the library."""

    agents: list[LibraryMatch]
    cohorts: list[LibraryMatch]


async def library_context(settings: Settings, library: Library | None, task: str) -> LibraryContext:
    k = settings.planning.library_top_k
    if library is None or k == 0:
        return LibraryContext([], [])
    return LibraryContext(await library.find_agents(task, k), await library.find_cohorts(task, k))


async def reuse_cohort(library: Library | None, task: str) -> Cohort | None:
    """A stored cohort similar enough, with a good record, proposed again for ``task``."""
    if library is None:
        return None
    match = await library.find_reusable_cohort(task)
    if match is None or match.entry.cohort is None:
        return None
    return match.entry.cohort.model_copy(
        update={"id": new_id("coh"), "task": task, "reused_from": reused_entry(match)}
    )


def _shown(ctx: LibraryContext) -> dict[str, list[dict[str, Any]]]:
    def record(m: LibraryMatch) -> dict[str, Any]:
        r = m.entry.record
        return {
            "id": m.entry.id,
            "name": m.entry.name or "",
            "similarity": round(m.similarity, 2),
            "quality": round(m.quality, 2),
            "runs": r.runs,
            "successes": r.successes,
            "approvals": r.approvals,
            "rejections": r.rejections,
        }

    agents = [
        {**record(m), "text": m.entry.text, "role": a.role, "tools": list(a.tools)}
        for m in ctx.agents
        if (a := m.entry.agent) is not None
    ]
    cohorts = [
        {
            **record(m),
            "text": m.entry.text,
            "agents": [f"{a.name} ({a.role})" for a in c.agents],
        }
        for m in ctx.cohorts
        if (c := m.entry.cohort) is not None
    ]
    return {"library_agents": agents, "library_cohorts": cohorts}


async def design_cohort(
    settings: Settings,
    llm: LLM,
    registry: ToolRegistry,
    prompts: PromptLibrary,
    task: str,
    *,
    library: Library | None = None,
    meter: Meter | None = None,
    files: Sequence[AttachedFile] = (),
) -> Cohort:
    """A validated cohort for ``task`` (system prompts not written yet: prompt_creator).

    A reusable stored cohort is returned without any model call. Otherwise the model
    designs one; designs with problems go back with the problems, up to
    ``planning.planner_attempts`` replies, then PlanningError names the last problems.
    """
    reused = await reuse_cohort(library, task)
    if reused is not None:
        return reused
    ctx = await library_context(settings, library, task)
    rules = DesignRules(
        settings=settings,
        registry=registry,
        patterns=pattern_names(prompts),
        reusable={m.entry.id: reused_entry(m) for m in ctx.agents if m.entry.agent},
        reusable_specs={m.entry.id: m.entry.agent for m in ctx.agents if m.entry.agent},
    )
    caps = settings.agents
    text = prompts.render(
        "planning/planner.j2",
        task=task,
        attached=[f.describe() for f in files],
        tool_docs=catalogue(registry),
        patterns=sorted(rules.patterns),
        base_tools=list(caps.base_tools),
        caps={
            "max_depth": caps.max_depth,
            "children_per_agent": caps.children_per_agent,
            "per_run": caps.per_run,
            "tokens_per_run": settings.limits.tokens_per_run,
            "tokens_per_agent": settings.limits.tokens_per_agent,
            "cost_per_run_usd": settings.limits.cost_per_run_usd,
        },
        **_shown(ctx),
    )
    request = LLMRequest(
        model=settings.llm.model_for("planner"),
        messages=(ChatMessage(role="user", content=text),),
        agent_name="planner",
    )
    design = await ask_structured(
        llm,
        prompts,
        request,
        CohortDesign,
        stage="planner",
        attempts=settings.planning.planner_attempts,
        meter=meter or Meter(),
        check=lambda d: design_problems(d, rules),
    )
    return to_cohort(task, design, rules)
