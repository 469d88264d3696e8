"""How the offline demo's scripted router and planner shape any request, from its words
(core/process/demo_words.py): a simple question goes direct (arithmetic worked out with
``calculate``, the clock with ``current_time``, anything else a plain "demo mode" answer
that repeats the question); anything else gets a cohort of 1–3 teams — a researcher per
item the task names (or on its subject), a numbers team when it asks for costs or figures,
a writing team when it asks for something written. Deterministic, offline; the agents'
brains are in demo_general.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.process.demo_words import (
    FIGURES,
    PLAN_WORDS,
    TIME,
    WRITING,
    deliverable_of,
    expression_in,
    items_in,
    subject_of,
    topic_of,
    zone_in,
)


@dataclass(frozen=True)
class Direct:
    """A request the router answers directly: the draft answer, and the one tool call the
    UI agent makes to check it (a ``calculate`` expression or a ``current_time`` zone)."""

    answer: str
    expression: str | None = None
    timezone: str | None = None


def direct(task: str) -> Direct | None:
    """How a simple request is answered; None when it needs a team."""
    words = task.split()
    expression = expression_in(task)
    if expression is not None and len(words) <= 12:
        return Direct(f"Working out {expression}.", expression=expression)
    if TIME.search(task) and len(words) <= 12:
        return Direct("Reading the clock.", timezone=zone_in(task))
    if len(words) <= 12 and not PLAN_WORDS.search(task):
        return Direct(
            f"Demo mode: the scripted offline model answers without a real LLM, so it can "
            f"work out arithmetic and clocks but not “{task.strip()}”. With a real model "
            "configured ([llm] model in config.toml), Caramba answers a question like this "
            "directly, in one step."
        )
    return None


def route(task: str) -> dict[str, Any]:
    """What the scripted router submits for ``task``."""
    simple = direct(task)
    if simple is not None:
        return {
            "path": "direct",
            "reason": "a simple question: one answer",
            "answer": simple.answer,
        }
    teams = ", ".join(t.name for t in shape(task))
    return {"path": "plan", "reason": f"several parts: a cohort ({teams})", "answer": None}


@dataclass(frozen=True)
class TeamShape:
    """One team of the cohort: its name, pattern, lead, and members with their briefs."""

    name: str
    pattern: str
    lead: str
    brief: str
    members: tuple[tuple[str, str], ...]
    tools: tuple[str, ...]


def shape(task: str, offered: frozenset[str] = frozenset()) -> list[TeamShape]:
    """The teams for ``task`` (1–3), from its words; tools only among ``offered``
    (all of them when empty)."""

    def have(*names: str) -> tuple[str, ...]:
        return tuple(n for n in names if not offered or n in offered)

    items = items_in(task)
    topic, subject = topic_of(task), subject_of(task)
    if items:
        researchers = tuple((f"{i} researcher", f"Finds the facts about {i}.") for i in items)
    else:
        researchers = (
            (f"{topic} researcher", f"Finds the main facts about {subject}."),
            ("Sources checker", f"Finds and checks sources on {subject}."),
        )
    teams = [
        TeamShape(
            "Research",
            "fan_out",
            "Research lead",
            f"Research {', '.join(items)}, one part each."
            if items
            else f"Research {subject}: the facts and their sources.",
            researchers,
            have("read_file", "write_file"),  # offline: no web tools on the demo's card
        )
    ]
    if FIGURES.search(task):
        teams.append(
            TeamShape(
                "Numbers",
                "fan_out",
                "Numbers lead",
                "Put figures on it: costs, sizes, totals.",
                (("Analyst", f"Works out the figures for {subject} with calculate."),),
                have("calculate", "write_file"),
            )
        )
    if WRITING.search(task) or len(teams) > 1 or len(items) > 1:
        kind = deliverable_of(task, compared=len(items) > 1)
        teams.append(
            TeamShape(
                "Writing",
                "pipeline",
                "Writing lead",
                f"Turn the findings into a {kind} for the person who asked.",
                (
                    ("Writer", f"Drafts the {kind} from the findings."),
                    ("Reviewer", f"Checks the {kind} for gaps and unsupported claims."),
                ),
                have("read_file", "write_file"),
            )
        )
    return teams


def design(task: str, offered: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The cohort the scripted planner submits for ``task``: an orchestrator over
    :func:`shape`'s teams."""
    teams = shape(task, offered)
    agents: list[dict[str, Any]] = [
        {
            "name": "Orchestrator",
            "role": "orchestrator",
            "description": "Hands each team its part, merges the teams' results, answers.",
            "tools": list(tuple(n for n in ("write_file",) if not offered or n in offered)),
            "max_tokens": 20_000,
        }
    ]
    for t in teams:
        agents.append(
            {
                "name": t.lead,
                "role": "lead",
                "parent": "Orchestrator",
                "team": t.name,
                "description": t.brief,
                "tools": list(t.tools),
                "max_tokens": 15_000,
            }
        )
        agents += [
            {
                "name": name,
                "role": "member",
                "parent": t.lead,
                "team": t.name,
                "description": brief,
                "tools": list(t.tools),
                "max_tokens": 10_000,
                "max_turns": 6,
            }
            for name, brief in t.members
        ]
    return {
        "steps": [{"title": t.brief, "tools": list(t.tools)} for t in teams],
        "agents": agents,
        "teams": [{"name": t.name, "lead": t.lead, "pattern": t.pattern} for t in teams],
        "budget_usd": 0.5,
        "rationale": f"{len(teams)} team(s) shaped from the request's words (offline demo).",
    }
