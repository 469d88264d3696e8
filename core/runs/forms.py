"""People answering the forms MCP servers ask for (elicitation): :func:`open_form` and
:func:`answer_form`, part of the people room (``core.runs.people`` exports them).

Who may answer: whoever may decide about the run (the requester, ``[approval]
approvers``, a platform's approver). The form must still be open (its call waits for
it). Accepting a form checks what was typed against its fields (``core.types.forms``);
the problems come back in plain words, each naming its field, and nothing is sent.
The answer closes the form in one step (``core.state.forms``): a second click, or a
click after the call gave up, is told so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal

from core.runs.approval import may_decide
from core.runs.outcomes import Done, FormInvalid, Refused, Said, ToFill
from core.state import forms
from core.state.forms import FormReply, OpenForm
from core.state.people import PeopleMarks
from core.types.events import FormClosed
from core.types.forms import Typed, check, fields_of
from core.types.people import AS_IS, Person, Who

if TYPE_CHECKING:
    from core.services import Services

Action = Literal["accept", "decline", "cancel"]
CLOSED = "This form is closed: it was answered already, or its tool stopped waiting."
_SAID: dict[Action, tuple[str, str]] = {
    "accept": ("Sent by ", " to "),
    "decline": ("Declined by ", " for "),
    "cancel": ("Dismissed by ", " for "),
}


async def _open(
    svc: Services, run_id: str, form_id: str, person: Person, names: Callable[[str], str]
) -> OpenForm | Refused:
    """The form, if it is open and ``person`` may answer it; else the refusal."""
    run = await svc.store.get_run(run_id)
    refusal = may_decide(svc.settings, run, person.id, names, approver=person.approver)
    if refusal is not None:
        return Refused(refusal.replace("decide about this run", "answer this form"), run)
    form = await forms.get(svc.store, run_id, form_id)
    if form is None:
        return Refused(CLOSED, run)
    return form


async def _names(svc: Services, run_id: str, person: Person, who: Who) -> Callable[[str], str]:
    """Names for a refusal only ``person`` reads (the requester's, as ``who`` shows it);
    the person's own name remembered, as every action of the people room does."""
    await PeopleMarks(svc.store).remember(person.id, person.name)
    requester = (await svc.store.get_run(run_id)).requested_by
    names = {person.id: person.name}
    if requester and requester not in names:
        names[requester] = await who.name(requester)
    return lambda user_id: names.get(user_id) or "someone"


async def open_form(
    svc: Services, run_id: str, form_id: str, person: Person, *, who: Who = AS_IS
) -> ToFill | Refused:
    """What a Fill in button opens: the open form's fields, if ``person`` may answer it
    (as for deciding about the run)."""
    names = await _names(svc, run_id, person, who)
    form = await _open(svc, run_id, form_id, person, names)
    if isinstance(form, Refused):
        return form
    return ToFill(form.id, form.server, form.message, fields_of(form.requested), form.url)


async def answer_form(
    svc: Services,
    run_id: str,
    form_id: str,
    person: Person,
    action: Action,
    typed: Mapping[str, Typed] | None = None,
    *,
    who: Who = AS_IS,
) -> Done | FormInvalid | Refused:
    """``person``'s answer to the form: ``accept`` with what they ``typed`` (checked
    against its fields; :class:`FormInvalid` says what to correct), ``decline`` or
    ``cancel``; the waiting tool call hands it to its MCP server."""
    names = await _names(svc, run_id, person, who)
    form = await _open(svc, run_id, form_id, person, names)
    if isinstance(form, Refused):
        return form
    content = None
    if action == "accept" and form.url is None:
        content, problems = check(fields_of(form.requested), typed or {})
        if problems:
            return FormInvalid(tuple(problems))
    reply = FormReply(action=action, content=content, by=person.id)
    if not await forms.answer(svc.store, run_id, form_id, reply):
        return Refused(CLOSED)
    await svc.store.emit(
        FormClosed(
            run_id=run_id, agent_id=form.agent_id, form_id=form_id, action=action, by=person.id
        )
    )
    before, between = _SAID[action]
    run = await svc.store.get_run(run_id)
    return Done(run, Said(before, person.name, f"{between}{form.server}."))
