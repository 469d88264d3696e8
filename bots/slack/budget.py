"""A run paused at its budget, in Slack: the pause with "Extend by $2.00" and "Stop here"
(Block Kit; the value is the run id, the block id says which limit was reached), and the
clicks → ``core.runs.people.extend`` / ``stop`` by the person who clicked (the rule —
who may decide about the run, as for Cancel — is the people room's); a refusal only the
clicker sees. Once decided, the pause is redrawn through the run's outbox to say who did
what, without its buttons."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncAck
from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    MarkdownTextObject,
    SectionBlock,
)

from bots.chat.intentions import Paused
from bots.chat.pause import STOP_LABEL, extend_label, pause_text
from bots.chat.ports import Place, Rendered
from bots.slack.context import SlackContext
from bots.slack.mentions import MENTIONS
from bots.slack.text import escape, truncate
from core.runs import people
from core.runs.outcomes import Refused

EXTEND = "caramba_extend"
STOP = "caramba_stop"


def paused_message(p: Paused) -> Rendered:
    """The pause: its words and Extend / Stop."""
    text = escape(pause_text(p))
    blocks: list[Block] = [
        SectionBlock(text=MarkdownTextObject(text=truncate(text))),
        ActionsBlock(
            block_id=f"budget:{p.what}:{p.run_id}",
            elements=[
                ButtonElement(
                    text=extend_label(p), action_id=EXTEND, value=p.run_id, style="primary"
                ),
                ButtonElement(text=STOP_LABEL, action_id=STOP, value=p.run_id, style="danger"),
            ],
        ),
    ]
    return Rendered(text, [b.to_dict() for b in blocks])


class BudgetButtons:
    """Extend / Stop listeners on ``ctx.app``; ``refuse(body, text)`` tells the clicker
    only (people named by core's who port shown by name)."""

    def __init__(
        self, ctx: SlackContext, refuse: Callable[[dict[str, Any], str], Awaitable[None]]
    ) -> None:
        self.ctx, self.refuse = ctx, refuse
        ctx.app.action(EXTEND)(self._on_extend)
        ctx.app.action(STOP)(self._on_stop)

    async def _on_extend(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        self.ctx.spawn(self.decide(body, extend=True))

    async def _on_stop(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        self.ctx.spawn(self.decide(body, extend=False))

    async def decide(self, body: dict[str, Any], *, extend: bool) -> None:
        """A click → extend or stop the run → the pause redrawn to say so; or a refusal
        (not allowed; already extended, stopped or over: core's reason)."""
        svc = self.ctx.svc
        user, run_id = body["user"]["id"], body["actions"][0]["value"]
        person = await self.ctx.people.person(user)
        act = people.extend if extend else people.stop
        outcome = await act(svc, run_id, person, who=MENTIONS)
        if isinstance(outcome, Refused):
            await self.refuse(body, outcome.reason)
            return
        said_now = outcome.said.render(escape, f"<@{escape(user)}>")
        said = body["message"].get("text") or ""
        blocks = [
            SectionBlock(text=MarkdownTextObject(text=truncate(said))),
            SectionBlock(text=MarkdownTextObject(text=f"*{said_now}*")),
        ]
        done = Rendered(f"{said}\n{said_now}", [b.to_dict() for b in blocks])
        message = body["message"]
        place = Place(body["channel"]["id"], message.get("thread_ts") or message["ts"])
        await self.ctx.redraws.redraw(run_id, place, message["ts"], done, "decided pause")
