"""How the offline demo's scripted router and planner shape any request, from its words:
a simple question goes direct (arithmetic worked out with ``calculate``, the clock with
``current_time``, anything else a plain "demo mode" answer that repeats the question);
anything else gets a cohort of 1–3 teams — researchers per item named in the task (or per
aspect), a numbers team when it asks for costs or figures, a writing team when it asks
for something written. Deterministic, offline; the agents' brains are in demo_general.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_PLAN_WORDS = re.compile(
    r"\b(compare|comparison|research|investigate|write|draft|report|summari[sz]e|plan|"
    r"organi[sz]e|build|design|analy[sz]e|evaluate|review|prepare|create|recommend|"
    r"budget|cost|estimate|pros|cons|options|alternatives|vs\.?|versus)\b",
    re.IGNORECASE,
)
_ARITHMETIC = re.compile(r"\(?-?\d[\d.,]*\)?(?:\s*[-+*/×x÷^]\s*\(?-?\d[\d.,]*\)?)+")
_TIME = re.compile(r"\bwhat time\b|\btime (?:is it )?in\b|\bclock\b", re.IGNORECASE)
ZONES = {
    "tokyo": "Asia/Tokyo",
    "london": "Europe/London",
    "paris": "Europe/Paris",
    "berlin": "Europe/Berlin",
    "lisbon": "Europe/Lisbon",
    "new york": "America/New_York",
    "san francisco": "America/Los_Angeles",
    "los angeles": "America/Los_Angeles",
    "sydney": "Australia/Sydney",
    "singapore": "Asia/Singapore",
    "delhi": "Asia/Kolkata",
}
_NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "2": 2, "3": 3, "4": 4, "5": 5}
_COUNTED = re.compile(r"\b(two|three|four|five|[2-5])\s+([a-z][a-z-]+)", re.IGNORECASE)
_LIST_START = re.compile(r"\b(?:compare|between|of|to|choose|pick)\s+|:\s*", re.IGNORECASE)
_LIST_END = re.compile(r"[.?!;]|\s+(?:for|on|in terms of|by|with|and then)\s+")
_SPLIT = re.compile(r",\s*(?:and\s+|or\s+)?|\s+(?:and|or|vs\.?|versus)\s+", re.IGNORECASE)
_FIGURES = re.compile(
    r"\b(cost|costs|price|prices|budget|how much|estimate|figures|numbers|statistics|data)\b",
    re.IGNORECASE,
)
_WRITING = re.compile(
    r"\b(write|draft|report|summary|summari[sz]e|post|email|article|memo|plan|recommend|"
    r"recommendation|compare|comparison|table|document|proposal|brief)\b",
    re.IGNORECASE,
)
_STOP = frozenset(
    "a an the and or of for to in on at by with our my your their is are be this that these "
    "those what which who how please me us we i it its from into about between three two four "
    "five some any all each".split()
)
_VERBS = frozenset(m.lower() for m in _PLAN_WORDS.pattern.split("|") if m.isalpha())


@dataclass(frozen=True)
class Direct:
    """A request the router answers directly: the draft answer, and the one tool call the
    UI agent makes to check it (a ``calculate`` expression or a ``current_time`` zone)."""

    answer: str
    expression: str | None = None
    timezone: str | None = None


def expression_in(task: str) -> str | None:
    """The arithmetic in ``task`` as ``calculate`` takes it ("2+2", "3 × 4" → "3 * 4")."""
    found = _ARITHMETIC.search(task)
    if found is None:
        return None
    text = found.group(0).replace(",", "")
    return re.sub(r"\s*[×x]\s*", " * ", text).replace("÷", "/").replace("^", "**").strip()


def zone_in(task: str) -> str:
    lowered = task.lower()
    return next((zone for city, zone in ZONES.items() if city in lowered), "UTC")


def direct(task: str) -> Direct | None:
    """How a simple request is answered; None when it needs a team."""
    words = task.split()
    expression = expression_in(task)
    if expression is not None and len(words) <= 12:
        return Direct(f"Working out {expression}.", expression=expression)
    if _TIME.search(task) and len(words) <= 12:
        return Direct("Reading the clock.", timezone=zone_in(task))
    if len(words) <= 12 and not _PLAN_WORDS.search(task):
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


def _title(text: str) -> str:
    text = re.sub(r"[^\w\s+#.-]", "", text).strip(" .")
    return " ".join(w if w[:1].isupper() else w.capitalize() for w in text.split()[:3])


def _singular(noun: str) -> str:
    noun = noun.lower()
    if noun.endswith("ies"):
        return noun[:-3] + "y"
    if noun.endswith(("sses", "xes", "ches", "shes")):
        return noun[:-2]
    return noun[:-1] if noun.endswith("s") else noun


def _is_item(part: str) -> bool:
    """A thing named in a list ("Postgres", "New York"), not a clause ("write a plan")."""
    words = part.lower().split()
    return len(words) <= 3 and words[0] not in _VERBS and not {"a", "an", "the"} & set(words)


def items_in(task: str) -> list[str]:
    """The things the task names to look at, in its order (at most five): a list after
    "compare", "between", "of" or a colon; else "three databases" → Database A, B, C."""
    for start in _LIST_START.finditer(task):
        rest = re.split(
            r"[.?!;]|\s+(?:for|on|in terms of|by|with|and then)\s+", task[start.end() :]
        )
        parts = [p.strip() for p in _SPLIT.split(rest[0]) if p.strip()]
        parts = [re.sub(r"^(?:the|a|an)\s+", "", p, flags=re.IGNORECASE) for p in parts]
        if len(parts) >= 2 and all(_is_item(p) for p in parts):
            return [_title(p) for p in parts[:5]]
    counted = _COUNTED.search(task)
    if counted:
        noun = _singular(counted.group(2)).capitalize()
        return [f"{noun} {'ABCDE'[i]}" for i in range(_NUMBERS[counted.group(1).lower()])]
    return []


def topic_of(task: str) -> str:
    """A few key words of the task ("Research the history of bicycles" → "History Bicycles")."""
    about = re.search(r"\b(?:about|on|of|for)\s+(.+)", task, re.IGNORECASE)
    phrase = about.group(1) if about else task
    words = [w for w in re.findall(r"[A-Za-z][\w+#-]*", phrase) if w.lower() not in _STOP]
    keys = [w for w in words if w.lower() not in _VERBS] or words or ["Task"]
    return _title(" ".join(keys[:2]))


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
    topic = topic_of(task)
    if items:
        researchers = tuple((f"{i} researcher", f"Finds the facts about {i}.") for i in items)
    else:
        researchers = (
            (f"{topic} researcher", f"Finds the main facts about {topic.lower()}."),
            ("Sources checker", f"Finds and checks sources on {topic.lower()}."),
        )
    teams = [
        TeamShape(
            "Research",
            "fan_out",
            "Research lead",
            f"Research {', '.join(items) if items else topic.lower()}, one part each.",
            researchers,
            have("read_file", "write_file"),  # offline: no web tools on the demo's card
        )
    ]
    if _FIGURES.search(task):
        teams.append(
            TeamShape(
                "Numbers",
                "fan_out",
                "Numbers lead",
                "Put figures on it: costs, sizes, totals.",
                (("Analyst", f"Works out the figures for {topic.lower()} with calculate."),),
                have("calculate", "write_file"),
            )
        )
    if _WRITING.search(task) or len(teams) > 1 or len(items) > 1:
        kind = "comparison" if len(items) > 1 else "report"
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
