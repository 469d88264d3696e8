"""The words of the web chat's schedules: a schedule as typed where a request goes
("schedule every weekday at 9:00: summarise the open tickets, $2"), a budget as typed in
a form, and what became of an action, said in plain words (the page escapes them)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import assert_never

from core.runs.outcomes import Refused
from core.runs.schedules import ScheduleOutcome
from core.types.schedules import Changed, NotUnderstood, Scheduled

# "schedule <when>: <task>" (or "<when> | <task>"), a budget at its end: "$2", "up to $2".
_TYPED = re.compile(r"^\s*schedule\b[:\s]*(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)
_SPLIT = re.compile(r":\s+|\s+\|\s+|\s+[—–]\s+")
_BUDGET = re.compile(
    r"[\s,;(]*(?:up\s+to|budget|max(?:imum)?)?\s*\$\s*(?P<usd>\d+(?:\.\d+)?)\s*\)?\s*$",
    re.IGNORECASE,
)
HOW = (
    "Type it as “schedule every weekday at 9:00: summarise the open tickets, $2” — "
    "when, a colon, the task, and a budget per firing if you like."
)
# The verbs of the command every platform takes (bots.chat.schedule_command).
VERBS = frozenset({"add", "list", "pause", "resume", "delete", "edit"})


def verb(text: str) -> str:
    """The word after "schedule" (lower case), "" if there is none."""
    words = text.split(maxsplit=2)
    return words[1].lower() if len(words) > 1 else ""


@dataclass(frozen=True)
class Typed:
    """A schedule as typed: ``when``, ``task``, ``budget_usd`` (None: the default)."""

    when: str
    task: str
    budget_usd: float | None = None


def typed(text: str) -> Typed | str | None:
    """``text`` read as "schedule …": the schedule, what is missing from it (words to
    say), or None when it does not start with "schedule" (a request)."""
    m = _TYPED.match(text)
    if m is None:
        return None
    rest = m["rest"].strip()
    budget: float | None = None
    if (b := _BUDGET.search(rest)) is not None:
        budget = float(b["usd"])
        rest = rest[: b.start()].strip()
    parts = _SPLIT.split(rest, maxsplit=1)
    if len(parts) < 2 or not parts[0].strip() or not parts[1].strip():
        return HOW
    return Typed(parts[0].strip(), parts[1].strip(), budget)


def said(outcome: ScheduleOutcome) -> tuple[str, bool]:
    """What became of an action, in plain words (the page escapes them), and whether
    it was done."""
    match outcome:
        case Scheduled(line=line) | Changed(line=line):
            return line, True
        case NotUnderstood(words=words, hint=hint):
            return f"I could not read “{words}” as a schedule. {hint}", False
        case Refused(reason=reason):
            return reason, False
        case _:
            assert_never(outcome)
