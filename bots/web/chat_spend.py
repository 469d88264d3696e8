"""A request over its channel's monthly budget, in the web chat: the message's payload
(the ask in plain words, the labels), the buttons' actions (``spend:<approve|deny>``) →
``core.runs.spend.approve_spend`` as the web chat's person (the rule — the budget's
owner or an admin — is core's: the web chat decides when ``[governance]`` makes ``web``
the owner or an admin), and the message updated to say who decided
(``chat_spend.html`` shows it).

The web chat's requests are asked in one place (``bots.web.chat_place.WEB_PLACE``, where
its schedules post too): the spend ledger counts them under the web chat, and a budget
for ``web:web:chat`` governs them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bots.chat.intentions import SpendAsk
from bots.chat.ports import Place
from bots.chat.spend_asks import APPROVE_LABEL, DENY_LABEL, decided_text
from bots.web.chat_place import WEB_PLACE
from core.runs import spend
from core.runs.outcomes import Refused
from core.types.place import Place as Where

if TYPE_CHECKING:
    from bots.web.chat import WebChat

PREFIX = "spend:"
LABELS = {"approve": APPROVE_LABEL, "deny": DENY_LABEL}


def where(run_id: str) -> Where:
    """The web chat's place, the request's own thread named."""
    return WEB_PLACE.model_copy(update={"thread": run_id})


def ask_payload(a: SpendAsk) -> dict[str, Any]:
    """What the page shows beside the ask."""
    return {
        "kind": "spend_ask",
        "run": a.run_id,
        "place": a.place_name,
        "owner": a.owner_name,
        "labels": LABELS,
    }


async def act(chat: WebChat, run_id: str, action: str) -> str | None:
    """A click on the ask's button (``action``: ``spend:<approve|deny>``): the refusal
    to tell, else None (the message then says who decided)."""
    choice = action.removeprefix(PREFIX)
    if choice not in LABELS:
        return None
    outcome = await spend.approve_spend(chat.svc, run_id, chat.person, choice == "approve")
    if isinstance(outcome, spend.AskEnded):  # its run ended undecided: the buttons go
        await decided(chat, run_id, outcome.reason)
        return None
    if isinstance(outcome, Refused):
        return outcome.reason
    await decided(chat, run_id, decided_text(outcome.line))
    return None


async def decided(chat: WebChat, run_id: str, line: str) -> None:
    """The ask's message, without its buttons, saying who decided."""
    messages, _ = await chat.transport.messages(run_id)
    found = next((m for m in reversed(messages) if m.payload.get("kind") == "spend_ask"), None)
    if found is not None and not found.payload.get("decided"):
        payload = {**found.payload, "decided": line}
        await chat.transport.update(Place("web", run_id), found.id, found.text, payload)
