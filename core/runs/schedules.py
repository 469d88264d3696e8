"""People's actions on schedules, each with its guard inside: make one (:func:`schedule`),
list them (:func:`listed`), :func:`pause`, :func:`resume`, :func:`edit`, :func:`delete`.

Anybody may make a schedule in a channel (up to ``[schedules] max_per_channel``; never in
a direct message: :func:`direct`); only its owner or an approver (``[approval]
approvers``, ``Person.approver``) may change one.
A schedule made from a finished run (``from_run``) counts as its maker's approval of that
cohort at that budget: its firings run without asking while neither changes. One made
from a task asks at its first firing (the normal card), and the cohort approved then is
the one kept. Firing is ``core.runs.firings``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from core.runs.outcomes import Refused
from core.schedules.clock import SYSTEM_CLOCK, Clock
from core.schedules.rules import next_after, parse, when_shown
from core.state.schedules import ScheduleStore
from core.types._base import new_id
from core.types.people import Person
from core.types.place import Place
from core.types.run import RunState, RunStatus
from core.types.schedules import Changed, Listed, NotUnderstood, Schedule, Scheduled, fingerprint

if TYPE_CHECKING:
    from core.services import Services

# What became of a person's action on a schedule (adapters render it).
ScheduleOutcome = Scheduled | Changed | NotUnderstood | Refused

_TASK_CHARS = 4000


IN_A_CHANNEL = "Schedules post in a channel; ask in the channel you want them in."


def direct(place: Place) -> bool:
    """Whether ``place`` is a direct message (a Slack ``D…`` conversation, a Discord DM):
    no schedule is made there, its firings would post to one person only. The console
    and the web chat are their own places (no channel to ask in instead): allowed."""
    if place.platform == "slack":
        return place.channel.startswith("D")
    return place.platform == "discord" and place.workspace in ("", "dm")


def store(svc: Services) -> ScheduleStore:
    return ScheduleStore(svc.store)


def cohort_json(run: RunState) -> str:
    """What of a run a schedule runs again: its cohort (or its one agent), as JSON."""
    if run.cohort is not None:
        return run.cohort.model_dump_json()
    return run.root.model_dump_json() if run.root is not None else ""


def _budget(svc: Services, budget_usd: float | None) -> float | Refused:
    limits = svc.settings.schedules
    value = limits.default_budget_usd if budget_usd is None else budget_usd
    if not isinstance(value, int | float) or value != value or value <= 0:
        return Refused("A firing's budget must be more than $0, e.g. 2 for $2.00.")
    if value > limits.max_budget_usd:
        return Refused(
            f"${value:.2f} a firing is more than the ${limits.max_budget_usd:.2f} allowed here; "
            "ask your admin to raise [schedules] max_budget_usd."
        )
    return float(value)


async def schedule(
    svc: Services,
    person: Person,
    place: Place,
    *,
    task: str | None = None,
    from_run: str | None = None,
    when: str,
    tz: str | None = None,
    budget_usd: float | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> Scheduled | NotUnderstood | Refused:
    """``person`` makes a schedule in ``place``: ``task`` (planned at the first firing)
    or the cohort of the finished run ``from_run``, fired ``when`` (words or cron) in
    time zone ``tz``, each firing capped at ``budget_usd``."""
    if direct(place):
        return Refused(IN_A_CHANNEL)
    settings = svc.settings.schedules
    rule = parse(when, tz, settings)
    if isinstance(rule, NotUnderstood):
        return rule
    budget = _budget(svc, budget_usd)
    if isinstance(budget, Refused):
        return budget
    approved: str | None = None
    text = " ".join((task or "").split())
    if from_run is not None:
        try:
            source = await svc.store.get_run(from_run)
        except Exception:
            return Refused("I cannot find that run any more; schedule a task instead.")
        if source.status is not RunStatus.COMPLETED or source.root is None:
            return Refused(f"Only a finished run can be repeated: this one {source.status.words}.")
        text = text or source.task
        approved = fingerprint(cohort_json(source), text, budget)
    if not text:
        return Refused("Say what it should do, e.g. “summarise the open tickets”.")
    if len(text) > _TASK_CHARS:
        return Refused(f"The task is longer than {_TASK_CHARS} characters; shorten it.")
    now = clock.now()
    made = Schedule(
        id=new_id("sch"),
        owner=person.id,
        owner_name=person.name,
        place=place,
        task=text,
        from_run=from_run,
        rule=rule,
        budget_usd=budget,
        next_at=next_after(rule, now),
        approved=approved,
        overlap=settings.overlap,
    )
    if not await store(svc).add(made, settings.max_per_channel):
        return Refused(
            f"{place.shown()} has {settings.max_per_channel} schedules already, the most "
            "allowed: delete one first."
        )
    first = when_shown(made.next_at, rule.tz)
    return Scheduled(
        made, f"Scheduled by {person.name}: {made.shown(owner=False)}. First run: {first}."
    )


async def listed(svc: Services, place: Place | None = None) -> Listed:
    """The schedules of ``place`` (every channel's if None), the soonest first."""
    found = await (store(svc).in_place(place.key) if place else store(svc).every())
    return Listed(tuple(found))


def may_change(svc: Services, s: Schedule, person: Person) -> str | None:
    """None if ``person`` may change ``s``; else the refusal, naming its owner."""
    if person.approver or person.id == s.owner or person.id in svc.settings.approval.approvers:
        return None
    return (
        f"Only {s.owner_name}, who made this schedule, or one of the approvers your admin "
        "named can change it."
    )


async def _change(
    svc: Services, schedule_id: str, person: Person, apply: Callable[[Schedule], Schedule]
) -> Schedule | Refused:
    found = await store(svc).get(schedule_id)
    if found is None:
        return Refused("That schedule no longer exists (deleted?); list them to see the ones left.")
    refusal = may_change(svc, found, person)
    if refusal is not None:
        return Refused(refusal)
    saved = await store(svc).update(schedule_id, apply)
    return saved if saved is not None else Refused("That schedule no longer exists.")


async def pause(svc: Services, schedule_id: str, person: Person) -> Changed | Refused:
    """Stop firing it until resumed."""
    done = await _change(svc, schedule_id, person, lambda s: s.model_copy(update={"paused": True}))
    if isinstance(done, Refused):
        return done
    return Changed(done, f"Paused by {person.name}: {done.shown()}.")


async def resume(
    svc: Services, schedule_id: str, person: Person, *, clock: Clock = SYSTEM_CLOCK
) -> Changed | Refused:
    """Fire it again from its next slot after now (slots missed while paused are not made up)."""
    now = clock.now()

    def go(s: Schedule) -> Schedule:
        return s.model_copy(update={"paused": False, "next_at": next_after(s.rule, now)})

    done = await _change(svc, schedule_id, person, go)
    if isinstance(done, Refused):
        return done
    first = when_shown(done.next_at, done.rule.tz)
    return Changed(done, f"Resumed by {person.name}: {done.shown()}. Next run: {first}.")


async def edit(
    svc: Services,
    schedule_id: str,
    person: Person,
    *,
    when: str | None = None,
    tz: str | None = None,
    budget_usd: float | None = None,
    task: str | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> Changed | NotUnderstood | Refused:
    """Change when it fires, its budget or its task. A new budget or task changes what
    people approved: the next firing asks again."""
    found = await store(svc).get(schedule_id)
    if found is None:
        return Refused("That schedule no longer exists (deleted?); list them to see the ones left.")
    update: dict[str, object] = {}
    if when is not None or tz is not None:
        rule = parse(when or found.rule.words, tz or found.rule.tz, svc.settings.schedules)
        if isinstance(rule, NotUnderstood):
            return rule
        update["rule"], update["next_at"] = rule, next_after(rule, clock.now())
    if budget_usd is not None:
        budget = _budget(svc, budget_usd)
        if isinstance(budget, Refused):
            return budget
        update["budget_usd"] = budget
    if task is not None:
        text = " ".join(task.split())
        if not text or len(text) > _TASK_CHARS:
            return Refused(f"A task needs words, at most {_TASK_CHARS} characters.")
        update["task"] = text
    if not update:
        return Refused("Say what to change: when, the budget or the task.")
    done = await _change(svc, schedule_id, person, lambda s: s.model_copy(update=update))
    if isinstance(done, Refused):
        return done
    asks = " The next run asks for approval again." if {"budget_usd", "task"} & set(update) else ""
    return Changed(done, f"Changed by {person.name}: {done.shown()}.{asks}")


async def edit_form(
    svc: Services,
    schedule_id: str,
    person: Person,
    *,
    when: str,
    tz: str,
    budget_usd: float | None,
    clock: Clock = SYSTEM_CLOCK,
) -> Changed | NotUnderstood | Refused:
    """An edit form sent back (Discord's, the web chat's): its fields as they hold the
    schedule (empty: left as it is); only what differs is changed, so an unchanged budget
    does not ask for approval again."""
    found = await store(svc).get(schedule_id)
    if found is None:
        return Refused("That schedule no longer exists (deleted?); list them to see the ones left.")
    words, zone_name = " ".join(when.split()), tz.strip()
    new_when = words if words and words != found.rule.words else None
    new_tz = zone_name if zone_name and zone_name != found.rule.tz else None
    new_budget = budget_usd if budget_usd is not None and budget_usd != found.budget_usd else None
    if new_when is None and new_tz is None and new_budget is None:
        refusal = may_change(svc, found, person)
        return Refused(refusal or "Nothing changed: the form held the schedule as it is.")
    return await edit(
        svc, schedule_id, person, when=new_when, tz=new_tz, budget_usd=new_budget, clock=clock
    )


async def delete(svc: Services, schedule_id: str, person: Person) -> Changed | Refused:
    """Forget it (a firing already running goes on)."""
    found = await store(svc).get(schedule_id)
    if found is None:
        return Refused("That schedule no longer exists (deleted already?).")
    refusal = may_change(svc, found, person)
    if refusal is not None:
        return Refused(refusal)
    await store(svc).delete(found)
    return Changed(found, f"Deleted by {person.name}: {found.shown()}.")
