"""``schedule …`` as people type it on every chat platform (Slack's and Discord's
``/caramba schedule``, the web chat, the console), one call of ``core.runs.schedules``
each. Parts are separated by ``|``::

    schedule add every weekday at 9:00 | summarise the open tickets | $2 | Europe/Paris
    schedule list
    schedule pause|resume|delete <id>
    schedule edit <id> | when every day at 10:00 | budget 3 | task count them | tz UTC

The answer is plain text (core's words); an adapter escapes it in its own markup.
"""

from __future__ import annotations

import logging
import math

from core.runs import schedules as people
from core.runs.outcomes import Refused
from core.services import Services
from core.types.people import Person
from core.types.place import Place
from core.types.schedules import Changed, Listed, NotUnderstood, Scheduled

log = logging.getLogger(__name__)
USAGE = (
    "schedule add <when> | <task> | $<budget> | <time zone>  ·  schedule list  ·  "
    "schedule pause|resume|delete <id>  ·  "
    "schedule edit <id> | when <words> | budget <$> | task <words>"
)


def is_schedule(text: str) -> bool:
    """Whether a command's text is about schedules."""
    return text.strip().lower().split(" ", 1)[0] == "schedule"


def typed_budget(text: str) -> float | str | None:
    """A budget per firing as typed on any platform (``2``, ``$2.50``): the amount, None
    when left empty, or what is wrong with it in words to say. Whether the amount is
    allowed (above $0, at most ``[schedules] max_budget_usd``) is core's to say."""
    text = text.strip().removeprefix("$").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        return f"“{text}” is not an amount in US dollars; write one such as 2.50."
    return value


async def answer(svc: Services, person: Person, place: Place, text: str) -> str:
    """What to say to ``person`` about ``schedule …`` typed in ``place`` (a store that
    cannot be reached is said in one line, never left unanswered)."""
    try:
        return await _answer(svc, person, place, text)
    except Exception as exc:
        log.exception("schedule command failed: %r", text[:200])
        return (
            f"I could not reach the schedules ({type(exc).__name__}); nothing was changed. "
            "Try again in a minute."
        )


async def _answer(svc: Services, person: Person, place: Place, text: str) -> str:
    words = text.strip().split(" ", 1)[1].strip() if " " in text.strip() else ""
    verb, _, rest = words.partition(" ")
    verb = verb.lower()
    if verb == "list":
        return _listed(await people.listed(svc, place))
    if verb in ("pause", "resume", "delete"):
        sid = rest.strip()
        if not sid:
            return f"Which one? Say `schedule {verb} <id>` (ids are in `schedule list`)."
        action = {"pause": people.pause, "resume": people.resume, "delete": people.delete}[verb]
        return _said(await action(svc, sid, person))
    if verb == "add":
        parts = [p.strip() for p in rest.split("|")]
        if len(parts) < 2:
            return f"Say when and what: {USAGE}"
        budget = typed_budget(parts[2]) if len(parts) > 2 else None
        if isinstance(budget, str):
            return budget
        tz = parts[3] if len(parts) > 3 and parts[3] else None
        made = await people.schedule(
            svc, person, place, task=parts[1], when=parts[0], tz=tz, budget_usd=budget
        )
        return _said(made)
    if verb == "edit":
        sid, *changes = [p.strip() for p in rest.split("|")]
        fields: dict[str, str] = {}
        for change in changes:
            key, _, value = change.partition(" ")
            if key.lower() not in ("when", "budget", "task", "tz") or not value.strip():
                return f"I can change when, budget, task or tz: {USAGE}"
            fields[key.lower()] = value.strip()
        budget = typed_budget(fields.get("budget", ""))
        if isinstance(budget, str):
            return budget
        edited = await people.edit(
            svc,
            sid,
            person,
            when=fields.get("when"),
            tz=fields.get("tz"),
            budget_usd=budget,
            task=fields.get("task"),
        )
        return _said(edited)
    return f"Say one of: {USAGE}"


def _said(outcome: Scheduled | Changed | NotUnderstood | Refused) -> str:
    if isinstance(outcome, Scheduled | Changed):
        return f"{outcome.line} (id {outcome.schedule.id})"
    if isinstance(outcome, NotUnderstood):
        return outcome.hint
    return outcome.reason


def _listed(listed: Listed) -> str:
    if not listed.schedules:
        return "No schedules here yet. " + USAGE
    return "\n".join(f"• {s.id}: {s.shown()}" for s in listed.schedules)
