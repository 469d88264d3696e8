"""A request over its channel's (or workspace's) monthly budget, in its thread: the
relay's side (the ask as a :class:`SpendAsk` with Approve / Deny, the 80 % warning as a
note) and the words every adapter shows. The buttons are the adapters'; a click calls
``core.runs.spend.approve_spend`` (the rule — the budget's owner or an admin, once per
request — is core's), and the adapter then redraws the message through the run's outbox
to say who decided (:func:`decided_text`). A denial ends the run: its result says why."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from bots.chat.intentions import Note, SpendAsk
from core.runs.spend_asks import asked_text, warn_after, warned_text
from core.types.events import RunEvent, SpendApprovalAsked, SpendWarned

if TYPE_CHECKING:
    from bots.chat.relay import ThreadRelay

log = logging.getLogger(__name__)
APPROVE_LABEL = "Approve spending"
DENY_LABEL = "Deny"


def spend_ask(event: SpendApprovalAsked) -> SpendAsk:
    """The intention showing ``event``."""
    return SpendAsk(
        run_id=event.run_id,
        text=asked_text(event),
        place_name=event.place_name,
        owner_name=event.owner_name,
        spent_usd=event.spent_usd,
        month_usd=event.month_usd,
    )


def decided_text(said: str) -> str:
    """The line added once decided: ``✔ Spending over the budget approved by Oz.``."""
    mark = "✖" if "denied" in said else "✔"
    return f"{mark} {said}"


def follow_spend(relay: ThreadRelay, event: RunEvent) -> None:
    """The relay's part: the ask with its buttons; the warning as a note; other events
    are not spend's (a decision is shown by the adapter that took the click)."""
    if isinstance(event, SpendApprovalAsked):
        relay.reply("spend approval", spend_ask(event))
    elif isinstance(event, SpendWarned):
        relay.reply("spend warning", Note(warned_text(event), "warning"))


async def warn_at_end(relay: ThreadRelay) -> None:
    """At the run's end, in its thread: the 80 % warnings its cost brings (its channel's
    or workspace's month now past the line; once per place and month,
    ``core.runs.spend.warn_after``). Not on a replay; a failure is logged, the run's end
    is still shown."""
    if relay.svc is None or relay.quiet:
        return
    try:
        run = await relay.svc.store.get_run(relay.run_id)
        for warned in await warn_after(relay.svc, run):
            relay.reply("spend warning", Note(warned_text(warned), "warning"))
    except Exception:
        log.exception("checking the budgets at the end of %s failed", relay.run_id)


__all__ = [
    "APPROVE_LABEL",
    "DENY_LABEL",
    "decided_text",
    "follow_spend",
    "spend_ask",
    "warn_at_end",
]
