"""A tool call waiting for approval, in the web chat: the message's payload (the tool in
plain words, its arguments with secrets masked, the agent's reason), the buttons'
actions (``tool:<once|run|deny>:<approval id>``, a denial with the reason typed beside
it) → ``core.runs.people.approve_action`` as the web chat's person, and the message
updated to say who decided (``chat_approval.html`` shows it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bots.chat.approvals import (
    DENY_LABEL,
    ONCE_LABEL,
    REASON_LABEL,
    RUN_LABEL,
    ToolApproval,
    decided_text,
)
from bots.chat.ports import Place
from core.runs import people
from core.runs.outcomes import Refused
from core.types.approvals import Choice

if TYPE_CHECKING:
    from bots.web.chat import WebChat

PREFIX = "tool:"
_CHOICES: dict[str, Choice] = {"once": "once", "run": "run", "deny": "deny"}
LABELS = {"once": ONCE_LABEL, "run": RUN_LABEL, "deny": DENY_LABEL, "reason": REASON_LABEL}


def approval_payload(a: ToolApproval) -> dict[str, Any]:
    """What the page shows beside the headline."""
    return {
        "kind": "approval",
        "run": a.run_id,
        "approval": a.approval_id,
        "agent": a.agent,
        "tool": a.tool,
        "purpose": a.purpose,
        "risks": list(a.risks),
        "arguments": a.arguments,
        "reason": a.reason,
        "labels": LABELS,
    }


async def act(chat: WebChat, run_id: str, action: str, text: str) -> str | None:
    """A click on a request's button (``action``: ``tool:<choice>:<approval id>``;
    ``text``: a denial's reason): the refusal to tell, else None (the message then says
    who decided)."""
    _, choice, approval_id = action.split(":", 2)
    if choice not in _CHOICES:
        return None
    outcome = await people.approve_action(
        chat.svc, run_id, approval_id, chat.person, _CHOICES[choice], reason=text, who=chat.who
    )
    if isinstance(outcome, Refused):
        return outcome.reason
    await decided(chat, run_id, approval_id, decided_text(outcome.line))
    return None


async def decided(chat: WebChat, run_id: str, approval_id: str, line: str) -> None:
    """The request's message, without its buttons, saying who decided."""
    messages, _ = await chat.transport.messages(run_id)
    found = next((m for m in reversed(messages) if m.payload.get("approval") == approval_id), None)
    if found is not None:
        payload = {**found.payload, "decided": line}
        await chat.transport.update(Place("web", run_id), found.id, found.text, payload)
