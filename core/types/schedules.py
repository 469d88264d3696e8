"""Schedules: a saved cohort (or a task) that runs again and again in a channel.

A :class:`Schedule` is stored in Redis (``core.state.schedules``) and fired by the
background loop of every worker process (``core.runs.firings``): exactly one process
fires each slot. People make and change schedules through ``core.runs.schedules``; the
chat bots post each :class:`Firing` in the schedule's channel (``bots.chat.schedules``).

Outcomes of people's actions are typed (:class:`Scheduled`, :class:`Changed`,
:class:`Listed`, :class:`NotUnderstood`; a refusal is ``core.runs.outcomes.Refused``,
as for every other action of people); adapters render them and never re-decide.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from core.types._base import Frozen, now
from core.types.place import Place

Overlap = Literal["skip", "queue"]


class Rule(Frozen):
    """When a schedule fires: ``words`` as people typed them ("every weekday at 9:00"),
    the ``cron`` expression they mean (``0 9 * * 1-5``), read in time zone ``tz``."""

    words: str
    cron: str
    tz: str = "UTC"


class Schedule(Frozen):
    """One schedule. ``task``: what each firing asks; ``from_run``: the finished run whose
    cohort each firing runs (None: the first firing plans the task and asks for approval,
    and the cohort approved then is the one kept); ``budget_usd``: each firing's cost cap;
    ``approved``: the fingerprint (:func:`fingerprint`) of the cohort and budget people
    last approved — a firing whose fingerprint differs asks again (the normal card);
    ``next_at``: the slot due next (unix time); ``last_run_id``: the last firing's run."""

    id: str
    owner: str
    owner_name: str
    place: Place
    task: str
    from_run: str | None = None
    rule: Rule
    budget_usd: float = Field(gt=0)
    paused: bool = False
    next_at: float
    last_run_id: str | None = None
    last_fired_at: float | None = None
    approved: str | None = None
    overlap: Overlap = "skip"
    firings: int = 0
    created_at: float = Field(default_factory=now)

    def shown(self, *, owner: bool = True) -> str:
        """One line people read: ‘“every weekday at 9:00” (Europe/Paris), $2.00 a
        firing: summarise the open tickets — by Ana’ (without ``owner``, no ‘— by Ana’:
        for a line that names them already)."""
        state = " (paused)" if self.paused else ""
        by = f" — by {self.owner_name}" if owner else ""
        return (
            f"“{self.rule.words}” ({self.rule.tz}), ${self.budget_usd:.2f} a firing: "
            f"{_short(self.task)}{by}{state}"
        )


def _short(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def fingerprint(cohort_json: str, task: str, budget_usd: float) -> str:
    """What people approve for a schedule: its cohort (as JSON, ``""`` while none), its
    task and its budget. Any change → a new fingerprint → the next firing asks again."""
    raw = json.dumps([cohort_json, task, round(budget_usd, 6)])
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


class Firing(Frozen):
    """A schedule fired: run ``run_id`` was made for it, to be shown in ``place`` (a
    new top-level message in the channel, the run in its thread). ``asks``: the run waits
    for approval (its cohort or budget changed), else it runs at once."""

    schedule_id: str
    run_id: str
    place: Place
    words: str
    task: str
    owner_name: str
    asks: bool = False
    at: float = Field(default_factory=now)


# -- what became of a person's action --------------------------------------------------


@dataclass(frozen=True)
class Scheduled:
    """The schedule is kept; ``line`` says so with when it fires next."""

    schedule: Schedule
    line: str


@dataclass(frozen=True)
class Changed:
    """The schedule was paused, resumed, edited or deleted; ``line`` names who did it."""

    schedule: Schedule
    line: str


@dataclass(frozen=True)
class Listed:
    """The schedules asked for, in the order they fire."""

    schedules: tuple[Schedule, ...]

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(s.shown() for s in self.schedules)


@dataclass(frozen=True)
class NotUnderstood:
    """The words could not be read as a recurrence; ``hint`` says what would be."""

    words: str
    hint: str


__all__ = [
    "Changed",
    "Firing",
    "Listed",
    "NotUnderstood",
    "Overlap",
    "Rule",
    "Schedule",
    "Scheduled",
    "fingerprint",
]
