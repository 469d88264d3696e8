"""A tool call waiting for a person's approval, in its thread: the relay's side (the
request as a :class:`ToolApproval` with Approve once / Approve for this run / Deny, a
line when nobody decided in time) and the words every adapter shows. The buttons are the
adapters'; a click calls ``core.runs.people.approve_action`` (the rule — who may decide,
once per call — is the people room's), and the adapter then redraws the message through
the run's outbox to say who decided (:func:`decided_text`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bots.chat.intentions import Note, ToolApproval
from core.types.approvals import ApprovalRequest
from core.types.events import ApprovalAsked, ApprovalDecided, RunEvent

if TYPE_CHECKING:
    from bots.chat.relay import ThreadRelay

ONCE_LABEL = "Approve once"
RUN_LABEL = "Approve for this run"
DENY_LABEL = "Deny"
REASON_LABEL = "Why not? (the agent reads it)"
# Arguments shown in a chat message (the request keeps more, for the inspector).
ARGUMENTS_CHARS = 900


def tool_approval(request: ApprovalRequest, agent: str = "") -> ToolApproval:
    """The intention showing ``request`` (``agent``: the asking agent's name)."""
    return ToolApproval(
        run_id=request.run_id,
        approval_id=request.id,
        agent=agent or request.agent_name,
        tool=request.tool,
        purpose=request.purpose,
        arguments=_clipped(request.arguments),
        reason=request.reason,
        risks=request.risks,
    )


def _clipped(text: str) -> str:
    return text if len(text) <= ARGUMENTS_CHARS else text[: ARGUMENTS_CHARS - 1] + "…"


def headline(a: ToolApproval) -> str:
    """``Writer wants to use write_file: Create or replace a text file… (changes things)``."""
    risks = f" ({', '.join(a.risks)})" if a.risks else ""
    return f"🔐 {a.agent} wants to use {a.tool}: {a.purpose}{risks}"


def approval_text(a: ToolApproval) -> str:
    """The request in plain words (not escaped): what, why, with which arguments."""
    why = f"\nWhy: {a.reason}" if a.reason else ""
    return f"{headline(a)}{why}\nArguments:\n{a.arguments}\nIt waits for your decision."


def decided_text(said: str) -> str:
    """The line added once decided: ``✔ Approved once by Alice.``."""
    mark = "✖" if said.startswith("Denied") else "✔"
    return f"{mark} {said}"


async def follow_approval(relay: ThreadRelay, event: RunEvent) -> None:
    """The relay's part: the request with its buttons; a line when nobody decided in time
    (a person's decision is shown by the adapter that took the click); other events are
    not an approval's."""
    if isinstance(event, ApprovalAsked):
        agent = relay._who(event.agent_id)
        relay._status(phase="running", who=agent, doing="waits for approval of")
        relay._status(tool=event.request.tool)
        relay.show_status(force=True)
        relay.reply("tool approval", tool_approval(event.request, agent))
    elif isinstance(event, ApprovalDecided) and event.decision.choice == "expired":
        note = f"⌛ Nobody decided about {event.tool} in time: it was not run."
        relay.reply("approval expired", Note(note))
