"""The people room: everything a person does to a run, one function each, with its rule
inside and a typed outcome (``core.runs.outcomes``) that adapters only render.

- :func:`request` — anybody: a task becomes a run in ``planning`` (a worker plans it).
- :func:`reply` — anybody in the run's thread: answers an agent's open question, else
  follows up to the top agent; the hint when it reached nobody is "first" once per
  person and run. Files attached to it are taken while the run runs
  (:func:`takes_files`, :func:`with_attached`).
- :func:`editable`, :func:`decide` — who may decide (``approval.may_decide``: the
  requester, ``[approval] approvers``, ``Person.approver``), on a proposal only.
- :func:`cancel` — who may decide, a run not ended yet.
- :func:`extend`, :func:`stop` — who may decide, a run paused at its budget.
- :func:`open_form`, :func:`answer_form` — who may decide: an MCP server's form (``forms``).
- :func:`approve_action` — who may decide, a run not ended yet, once per waiting tool
  call (``tool_calls``; concurrent clicks make one decision).
- :func:`rate` — anybody, one vote per person and run (kept through ``core.state.people``).
- :func:`names` — the names people were last seen under here (each action keeps the
  person's), for pages that hold only ids (the inspector, the web chat's who port).

Adapters (Slack, Discord, the web chat, the console) translate a platform's payload
into a :class:`~core.types.people.Person` and pass their ``who`` port to name anybody
else; every line people read names people, never ids.

May call: ``core.runs`` (approval, control, budget, requests, learning, tool_calls),
``core.agent.questions``, ``core.state`` (through ``svc.store`` and
``core.state.people``). Never a chat platform.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from core.agent.questions import answer_question, follow_up, open_questions
from core.runs import approval, forms, learning, tool_calls
from core.runs.approval import Approve, Decision, Reject, decided_by, may_decide
from core.runs.budget import extend_run, stop_run
from core.runs.control import cancel_run
from core.runs.edits import agents_of
from core.runs.outcomes import (
    AlreadyRated,
    Delivered,
    Done,
    Editable,
    NotDelivered,
    NotRated,
    NotTaken,
    Rated,
    Rating,
    Refused,
    Requested,
    Said,
)
from core.runs.pause_words import added, amount, extended, stopped
from core.runs.requests import request_run
from core.state.people import PeopleMarks
from core.types.files import AttachedFile
from core.types.people import AS_IS, Person, Who
from core.types.place import Place
from core.types.run import RunState, RunStatus

if TYPE_CHECKING:
    from core.services import Services

log = logging.getLogger(__name__)
open_form, answer_form = forms.open_form, forms.answer_form  # the rules: core/runs/forms.py
approve_action = tool_calls.approve_action  # the rules: core/runs/tool_calls.py

_HINTS = {
    RunStatus.PLANNING: "I am still planning this request; wait for the proposal.",
    RunStatus.PROPOSED: "The agents start once the proposal is approved; to change it, "
    "use Edit on the card.",
}


def not_taken(exc: BaseException) -> NotTaken:
    """What to say when a request could not be recorded (``exc``: why)."""
    return NotTaken(
        f"I could not take this request ({type(exc).__name__}); please ask me again in a minute."
    )


async def request(
    svc: Services,
    task: str,
    person: Person,
    *,
    files: Sequence[AttachedFile] = (),
    run_id: str | None = None,
    place: Place | None = None,
) -> Requested | NotTaken:
    """Record ``person``'s ``task`` as a run (its ``files`` already in the workspace of
    ``run_id``: ``core.runs.requests.new_run_id``); a worker plans it. ``place``: where
    it was asked (its cost is counted there: ``core.spend``)."""
    try:
        await _marks(svc).remember(person.id, person.name)
        made = await request_run(
            svc, task, requested_by=person.id, run_id=run_id, files=files, place=place
        )
    except Exception as exc:
        log.exception("could not record %s's request", person.id)
        return not_taken(exc)
    return Requested(made)


async def reply(svc: Services, run_id: str, text: str, person: Person) -> Delivered | NotDelivered:
    """``person``'s words in the run's thread: the answer to the oldest open question,
    else a follow-up for the top agent; if neither can take it, why (``first`` once per
    person and run)."""
    await _marks(svc).remember(person.id, person.name)
    answering = bool(await open_questions(svc, run_id))
    if answering:
        step = await answer_question(svc, run_id, text, by=person.id)
    else:
        step = await follow_up(svc, run_id, text, by=person.id)
    if step.ok:
        return Delivered(step.run, answering)
    hint = _HINTS.get(
        step.run.status, f"Not delivered: {step.reason}. Mention me to start a new request."
    )
    first = await _marks(svc).first_hint(run_id, person.id)
    return NotDelivered(step.run, hint, first)


async def takes_files(svc: Services, run_id: str) -> bool:
    """Whether files attached to a reply go into the run's workspace now: only while the
    run runs (agents read them; before approval or after the end nobody would)."""
    run = await svc.store.get_run(run_id)
    return run.status in (RunStatus.RUNNING, RunStatus.WAITING_HUMAN)


def with_attached(svc: Services, text: str, kept: Sequence[AttachedFile]) -> str:
    """The reply's ``text`` followed by the list of the files now in the workspace."""
    if not kept:
        return text.strip()
    listed = [f.describe() for f in kept]
    return f"{text}\n\n{svc.prompts.render('bus/attached.j2', attached=listed)}".strip()


async def _namer(who: Who, person: Person, *ids: str | None) -> Callable[[str], str]:
    """Names for ``person`` and the people ``ids`` in a refusal only ``person`` reads
    (asked of ``who`` once each: the platform may show a name its own way)."""
    names: dict[str, str] = {}
    for user_id in (person.id, *ids):
        if user_id and user_id not in names:
            names[user_id] = await who.name(user_id)
    return lambda user_id: names.get(user_id) or "someone"


async def _allowed(svc: Services, run_id: str, person: Person, who: Who) -> RunState | Refused:
    """The run if ``person`` may decide about it, else the refusal (naming who may)."""
    await _marks(svc).remember(person.id, person.name)
    run = await svc.store.get_run(run_id)
    names = await _namer(who, person, run.requested_by)
    refusal = may_decide(svc.settings, run, person.id, names, approver=person.approver)
    return run if refusal is None else Refused(refusal, run)


def _said(decision: Decision, name: str) -> Said:
    if isinstance(decision, Approve):
        return Said("Approved by ", name, ".")
    if isinstance(decision, Reject):
        return Said("Rejected by ", name, ".")
    return Said("Updated by ", name, "; approve it to start.")


async def decide(
    svc: Services, run_id: str, person: Person, decision: Decision, *, who: Who = AS_IS
) -> Done | Refused:
    """Approve, reject or edit a proposal (``core.runs.approval.decide``: who may, the
    run still proposed, an edit re-validated), in one atomic step."""
    await _marks(svc).remember(person.id, person.name)
    run = await svc.store.get_run(run_id)
    names = await _namer(who, person, run.requested_by, decided_by(run))
    outcome = await approval.decide(
        svc, run_id, person.id, decision, names, approver=person.approver
    )
    if not outcome.ok:
        return Refused(outcome.message, outcome.run, outcome.problems)
    return Done(outcome.run, _said(decision, person.name))


async def editable(
    svc: Services, run_id: str, person: Person, *, who: Who = AS_IS
) -> Editable | Refused:
    """The proposal's agents, if ``person`` may edit it now (as for approving, while it
    is a proposal): what an Edit button opens its form with."""
    allowed = await _allowed(svc, run_id, person, who)
    if isinstance(allowed, Refused):
        return allowed
    if allowed.status is not RunStatus.PROPOSED:
        words = f"This proposal can no longer be edited: it {allowed.status.words}."
        return Refused(words, allowed)
    return Editable(allowed, tuple(agents_of(allowed)))


async def cancel(
    svc: Services, run_id: str, person: Person, *, who: Who = AS_IS, reason: str = ""
) -> Done | Refused:
    """Cancel the run (``core.runs.control.cancel_run``) if ``person`` may decide about
    it and it has not ended; its end says who cancelled it, by name."""
    allowed = await _allowed(svc, run_id, person, who)
    if isinstance(allowed, Refused):
        return allowed
    step = await cancel_run(svc, run_id, person.id, reason, name=person.name)
    if not step.ok:
        return Refused(f"Not cancelled: {step.reason}.", step.run)
    return Done(step.run, Said("Cancelled by ", person.name))


async def extend(
    svc: Services,
    run_id: str,
    person: Person,
    *,
    who: Who = AS_IS,
    tokens: int | None = None,
    cost_usd: float | None = None,
    wall_clock_s: float | None = None,
) -> Done | Refused:
    """Raise the paused run's limits (``[humans]`` by default) and resume it, if
    ``person`` may decide about it: ``▶ Extended by Alice: +$2.00``."""
    allowed = await _allowed(svc, run_id, person, who)
    if isinstance(allowed, Refused):
        return allowed
    step = await extend_run(
        svc, run_id, person.id, tokens=tokens, cost_usd=cost_usd, wall_clock_s=wall_clock_s
    )
    if not step.ok:
        return Refused(f"Not extended: {step.reason}.", step.run)
    what, h = allowed.paused or "cost", svc.settings.humans
    if tokens is None and cost_usd is None and wall_clock_s is None:
        figure = added(what, h)
    else:
        figure = amount(
            what,
            h.extend_cost_usd if cost_usd is None else cost_usd,
            h.extend_tokens if tokens is None else tokens,
            h.extend_wall_clock_s if wall_clock_s is None else wall_clock_s,
        )
    return Done(step.run, extended(person.name, figure))


async def stop(svc: Services, run_id: str, person: Person, *, who: Who = AS_IS) -> Done | Refused:
    """End the paused run with the results so far, if ``person`` may decide about it."""
    allowed = await _allowed(svc, run_id, person, who)
    if isinstance(allowed, Refused):
        return allowed
    step = await stop_run(svc, run_id, person.id, name=person.name)
    if not step.ok:
        return Refused(f"Not stopped: {step.reason}.", step.run)
    return Done(step.run, stopped(person.name))


async def rate(
    svc: Services,
    run_id: str,
    person: Person,
    *,
    up: bool | None = None,
    stars: int | None = None,
) -> Rating:
    """``person``'s rating of the run's result (👍/👎 ``up``, or ``stars``): their first
    one counts for the run's cohort and agents (``core.runs.learning.rate``); a double
    click or a change of mind does not."""
    value = str(stars) if stars is not None else ("up" if up else "down")
    marks = _marks(svc)
    if not await marks.vote(run_id, person.id, value):
        return AlreadyRated()
    try:
        await learning.rate(svc, await svc.store.get_run(run_id), thumbs_up=up, stars=stars)
    except Exception:
        log.exception("recording %s's rating of %s failed", person.id, run_id)
        await marks.unvote(run_id, person.id)  # it did not count: they may try again
        return NotRated()
    return Rated()


async def names(svc: Services, person_ids: Iterable[str]) -> dict[str, str]:
    """The names the people ``person_ids`` were last seen under (unknown ones left out)."""
    return await _marks(svc).names(person_ids)


def _marks(svc: Services) -> PeopleMarks:
    return PeopleMarks(svc.store)
