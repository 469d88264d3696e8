"""A person's decision about an agent's tool call waiting for approval
(``core.runs.people.approve_action`` is :func:`approve_action`): who may decide (as for
the proposal: ``approval.may_decide``), and the request still waiting
(``core.agent.approvals.decide``: once per call, concurrent clicks make one decision);
the outcome names who decided.

May call ``core.agent.approvals``, ``core.runs.approval``, ``core.state.people``; never a
chat platform."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from core.agent import approvals
from core.runs.approval import may_decide
from core.runs.outcomes import ActionDecided, Refused, Said
from core.state.people import PeopleMarks
from core.types.approvals import ApprovalDecision, Choice
from core.types.people import AS_IS, Person, Who
from core.types.run import RunState

if TYPE_CHECKING:
    from core.services import Services

_NOTE_CHARS = 500


async def approve_action(
    svc: Services,
    run_id: str,
    approval_id: str,
    person: Person,
    choice: Choice,
    *,
    reason: str = "",
    who: Who = AS_IS,
) -> ActionDecided | Refused:
    """Decide about an agent's tool call waiting for approval: ``once`` (this call),
    ``run`` (this call and the tool's later calls in the run) or ``deny`` (``reason``
    is what the agent reads), if ``person`` may decide about the run (as for Approve on
    the card) and nobody decided first; the agent is woken to go on."""
    await PeopleMarks(svc.store).remember(person.id, person.name)
    run = await svc.store.get_run(run_id)
    names = {person.id: person.name}
    if run.requested_by and run.requested_by not in names:
        names[run.requested_by] = await who.name(run.requested_by)
    refusal = may_decide(
        svc.settings, run, person.id, lambda u: names.get(u) or "someone", approver=person.approver
    )
    if refusal is not None:
        return Refused(refusal, run)
    return await _decide(svc, run, approval_id, person, choice, reason)


async def _decide(
    svc: Services, run: RunState, approval_id: str, person: Person, choice: Choice, reason: str
) -> ActionDecided | Refused:
    request = await approvals.request(svc, run.id, approval_id)
    if request is None:
        return Refused("No call of this run waits for that approval.", run)
    note = reason.strip()[:_NOTE_CHARS]
    now = time.time()
    made = ApprovalDecision(choice=choice, by=person.id, name=person.name, note=note, at=now)
    step = await approvals.decide(svc, run.id, approval_id, made)
    if not step.ok:
        return Refused(f"Not decided: {step.reason}.", step.run)
    return ActionDecided(step.run, request, made, said(made, person.name))


def said(made: ApprovalDecision, name: str) -> Said:
    """``Denied by Alice: not that folder``, ``Approved once by Alice.``."""
    if made.choice == "deny":
        return Said("Denied by ", name, f": {made.note}" if made.note else ".")
    if made.choice == "run":
        return Said("Approved for this run by ", name, ".")
    return Said("Approved once by ", name, ".")
