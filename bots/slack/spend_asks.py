"""A request over its channel's budget, asked in Slack: the ask in its thread with Approve
spending / Deny (:func:`ask_message`), and the clicks (:class:`SpendButtons`) →
``core.runs.spend.approve_spend`` by the clicker — the budget's owner or an admin, once
per request — the message redrawn through the run's outbox saying who decided; a refusal
only the clicker sees. The words of the ask are the chat layer's
(``bots.chat.spend_asks``)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncAck
from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    MarkdownTextObject,
    SectionBlock,
)

from bots.chat.intentions import SpendAsk
from bots.chat.ports import Place as ThreadPlace
from bots.chat.ports import Rendered
from bots.chat.spend_asks import APPROVE_LABEL, DENY_LABEL, decided_text, spend_ask
from bots.slack.context import SlackContext
from bots.slack.text import escape, truncate
from core.runs import spend
from core.runs.outcomes import Refused
from core.types.events import SpendApprovalAsked
from core.types.run import RunState

log = logging.getLogger(__name__)
APPROVE, DENY = "caramba_spend_approve", "caramba_spend_deny"


def ask_message(a: SpendAsk, decided: str = "") -> Rendered:
    """The ask; with ``decided`` (mrkdwn, already rendered), that line instead of the
    buttons."""
    text = escape(a.text)
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=truncate(text)))]
    if decided:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=decided)]))
    else:
        blocks.append(
            ActionsBlock(
                block_id=f"spend_ask:{a.run_id}"[:255],
                elements=[
                    ButtonElement(
                        text=APPROVE_LABEL, action_id=APPROVE, value=a.run_id, style="primary"
                    ),
                    ButtonElement(text=DENY_LABEL, action_id=DENY, value=a.run_id, style="danger"),
                ],
            )
        )
    return Rendered(truncate(text), [b.to_dict() for b in blocks])


class SpendButtons:
    """The Approve spending / Deny listeners on ``ctx.app``; ``refuse(body, text)`` tells
    the clicker only."""

    def __init__(
        self, ctx: SlackContext, refuse: Callable[[dict[str, Any], str], Awaitable[None]]
    ) -> None:
        self.ctx, self.refuse = ctx, refuse
        ctx.app.action(APPROVE)(self._on_click)
        ctx.app.action(DENY)(self._on_click)

    async def _on_click(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        self.ctx.spawn(self.decide(body))

    async def decide(self, body: dict[str, Any]) -> None:
        action = body["actions"][0]
        run_id, approve = str(action.get("value", "")), action.get("action_id") == APPROVE
        person = await self.ctx.people.person(body["user"]["id"])
        try:
            outcome = await spend.approve_spend(self.ctx.svc, run_id, person, approve)
        except Exception:  # an unknown run (a forged value), Redis away
            log.exception("deciding about spending for %s failed", run_id)
            await self.refuse(body, "I could not take this decision; try again in a minute.")
            return
        if isinstance(outcome, spend.AskEnded) and outcome.run is not None:
            # Its run ended undecided: the buttons go, the ask says so.
            await self._redraw(outcome.run, escape(outcome.reason), body)
            return
        if isinstance(outcome, Refused):
            await self.refuse(body, outcome.reason)
            return
        mention = f"<@{escape(body['user']['id'])}>"
        await self._redraw(outcome.run, decided_text(outcome.said.render(escape, mention)), body)

    async def _redraw(self, run: RunState, line: str, body: dict[str, Any]) -> None:
        """The ask redrawn with ``line`` (mrkdwn) instead of its buttons."""
        message = body["message"]
        place = ThreadPlace(body["channel"]["id"], message.get("thread_ts") or message["ts"])
        events = [e for _, e in await self.ctx.svc.store.read_events(run.id)]
        asked = [e for e in events if isinstance(e, SpendApprovalAsked)]
        if not asked:
            return
        shown = ask_message(spend_ask(asked[-1]), line)
        await self.ctx.redraws.redraw(run.id, place, message["ts"], shown, "spend ask")
