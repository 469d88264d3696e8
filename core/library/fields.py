"""What an entry is found by: three texts, embedded apart and scored together.

Each stored agent or cohort has one vector per field in the index:

* ``description`` — what it is for: an agent's description, a cohort's task;
* ``prompt`` — how it works: an agent's system prompt, a cohort's agents (name,
  description and prompt of each, in order);
* ``name`` — an agent's name, role and tools; a cohort's agents' names, roles and tools.

A query is scored against each field and the scores combined (``library.field_scoring``):
``weighted`` — the weighted mean with ``library.weight_*`` — or ``max`` — the best field;
the same for the fields' cosines and their BM25 shares (``search.py`` fuses the two).
On the evaluation set (tests/data/library_*.toml, all-MiniLM-L6-v2) the weighted mean wins
(see config.toml for the weights and the figures). The tools every agent has
(``agents.base_tools``) say nothing about an entry and are left out of the ``name`` text.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Literal

from core.config import LibrarySettings
from core.types import AgentSpec
from core.types.cohort import Cohort

Field = Literal["description", "prompt", "name"]
FIELDS: tuple[Field, ...] = ("description", "prompt", "name")
# Beyond what the embedder reads (256 tokens for MiniLM): kept short to embed fast.
_MAX_CHARS = 2000


def agent_fields(spec: AgentSpec, common_tools: Collection[str] = ()) -> dict[Field, str]:
    """The three texts an agent is found by (none empty)."""
    prompt = spec.system_prompt.strip()
    description = spec.description.strip() or f"{spec.name}: {prompt[:300]}"
    return {
        "description": description,
        "prompt": (prompt or description)[:_MAX_CHARS],
        "name": _name_text([spec], common_tools),
    }


def cohort_fields(cohort: Cohort, common_tools: Collection[str] = ()) -> dict[Field, str]:
    """The three texts a cohort is found by (none empty)."""
    team = " ".join(
        f"{a.name}: {a.description} {a.system_prompt}".strip()
        for a in cohort.agents
        if a.description or a.system_prompt
    )
    return {
        "description": cohort.task,
        "prompt": (team or cohort.task)[:_MAX_CHARS],
        "name": _name_text(list(cohort.agents), common_tools),
    }


def _name_text(agents: list[AgentSpec], common_tools: Collection[str]) -> str:
    names = ", ".join(f"{a.name} ({a.role})" for a in agents)
    tools = [t for t in dict.fromkeys(t for a in agents for t in a.tools) if t not in common_tools]
    return f"{names}: {', '.join(tools)}" if tools else names


def weights(settings: LibrarySettings) -> dict[Field, float]:
    """The weight of each field in the combined score (summing to 1)."""
    raw: dict[Field, float] = {
        "description": settings.weight_description,
        "prompt": settings.weight_prompt,
        "name": settings.weight_name,
    }
    total = sum(raw.values())
    return {field: w / total for field, w in raw.items()}


def combine(scores: Mapping[Field, float], settings: LibrarySettings) -> float:
    """One similarity from the per-field cosines (``library.field_scoring``)."""
    if settings.field_scoring == "max":
        return max(scores.values())
    return sum(w * scores[field] for field, w in weights(settings).items())
