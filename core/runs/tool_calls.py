"""A person's decision about an agent's tool call waiting for approval — the body of
``core.runs.people.approve_action``, once the people room found the person may decide
about the run: the request must still wait (``core.agent.approvals.decide``: once per
call, concurrent clicks make one decision), and the outcome names who decided.

May call ``core.agent.approvals``; never a chat platform."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from core.agent import approvals
from core.runs.outcomes import ActionDecided, Refused, Said
from core.types.approvals import ApprovalDecision, Choice
from core.types.people import Person
from core.types.run import RunState

if TYPE_CHECKING:
    from core.services import Services

_NOTE_CHARS = 500


async def decide(
    svc: Services, run: RunState, approval_id: str, person: Person, choice: Choice, reason: str
) -> ActionDecided | Refused:
    """Record ``person``'s ``choice`` about the call ``approval_id`` of ``run`` (a
    denial's ``reason`` is what the agent reads) and wake its agent; or why not."""
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
