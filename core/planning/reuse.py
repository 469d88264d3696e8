"""What planning takes from the agent library: a stored cohort proposed again as is, or
the best stored agents and cohorts shown to the planner with their records.

Direct reuse (:func:`reuse_cohort`) happens only when the library says one cohort is
clearly the one (``Library.find_reusable_cohort``: threshold, margin over the runner-up,
record). Its briefs are then rewritten for the new task by the prompt creator
(``PromptCreator.write_all``, one call per agent): a cohort kept from another run names
that run's data, audience and deliverable in its agents' prompts. Otherwise the planner
is shown ``planning.library_top_k`` agents and cohorts (:func:`library_context`) and may
reuse an agent as is, adapt it (its brief rewritten the same way) or design anew.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.config import Settings
from core.library import Library, LibraryMatch
from core.types._base import new_id
from core.types.cohort import Cohort, ReusedEntry

# Characters of a stored agent's prompt the planner is shown.
_PROMPT_EXCERPT = 300


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
        mean_rating=record.mean_stars,
        task=entry.cohort.task if entry.cohort is not None else "",
    )


@dataclass(frozen=True)
class LibraryContext:
    """What the planner is shown from the library."""

    agents: list[LibraryMatch]
    cohorts: list[LibraryMatch]


async def library_context(settings: Settings, library: Library | None, task: str) -> LibraryContext:
    """The ``planning.library_top_k`` best stored agents and cohorts for ``task``."""
    k = settings.planning.library_top_k
    if library is None or k == 0:
        return LibraryContext([], [])
    return LibraryContext(await library.find_agents(task, k), await library.find_cohorts(task, k))


async def reuse_cohort(library: Library | None, task: str) -> Cohort | None:
    """The stored cohort to propose again for ``task``, if the library finds one clearly
    (new ids for the cohort only; its briefs are rewritten by the prompt creator)."""
    if library is None:
        return None
    match = await library.find_reusable_cohort(task)
    if match is None or match.entry.cohort is None:
        return None
    return match.entry.cohort.model_copy(
        update={"id": new_id("coh"), "task": task, "reused_from": reused_entry(match)}
    )


def _record(m: LibraryMatch) -> dict[str, Any]:
    r = m.entry.record
    stars = r.mean_stars
    return {
        "id": m.entry.id,
        "name": m.entry.name or "",
        "similarity": round(m.similarity, 2),
        "quality": round(m.quality, 2),
        "runs": r.runs,
        "successes": r.successes,
        "approvals": r.approvals,
        "rejections": r.rejections,
        "ratings": r.ratings,
        "stars": f"{stars:.1f}" if stars is not None else "",
    }


def shown(ctx: LibraryContext) -> dict[str, list[dict[str, Any]]]:
    """The template variables ``library_agents`` and ``library_cohorts``."""
    agents = [
        {
            **_record(m),
            "text": m.entry.text,
            "role": a.role,
            "tools": list(a.tools),
            "prompt": " ".join(a.system_prompt.split())[:_PROMPT_EXCERPT],
        }
        for m in ctx.agents
        if (a := m.entry.agent) is not None
    ]
    cohorts = [
        {
            **_record(m),
            "text": m.entry.text,
            "agents": [f"{a.name} ({a.role})" for a in c.agents],
        }
        for m in ctx.cohorts
        if (c := m.entry.cohort) is not None
    ]
    return {"library_agents": agents, "library_cohorts": cohorts}
