"""A run paused at its budget, in the web chat: the pause's Extend / Stop forms (shown
while the run is paused: ``templates/chat.html``) → ``core.runs.budget.extend_run`` /
``stop_run`` by the person, allowed as for the card's decisions
(``core.runs.approval.may_decide``); what to tell them back in the thread."""

from __future__ import annotations

from bots.chat.pause import added, extended_text, stopped_text
from core.runs.approval import may_decide
from core.runs.budget import extend_run, stop_run
from core.services import Services


async def decide_budget(svc: Services, run_id: str, by: str, *, extend: bool) -> str:
    """Extend or stop the paused run ``run_id``; the line saying who did what, else why
    not (not allowed; already extended, stopped or over: core's reason)."""
    run = await svc.store.get_run(run_id)
    refusal = may_decide(svc.settings, run, by)
    if refusal is not None:
        return refusal
    what = run.paused or "cost"
    step = await (extend_run(svc, run_id, by) if extend else stop_run(svc, run_id, by))
    if not step.ok:
        return f"Not {'extended' if extend else 'stopped'}: {step.reason}."
    if not extend:
        return stopped_text(by)
    return extended_text(by, added(what, svc.settings.humans))
