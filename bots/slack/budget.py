"""A run paused at its budget, in Slack: the pause with "Extend by $2.00" and "Stop here"
(Block Kit; the value is the run id, the block id says which limit was reached), and the
clicks → ``core.runs.budget.extend_run`` / ``stop_run`` by the person who clicked. Only
the people who may decide about the run (``core.runs.approval.may_decide``, as for
Cancel) can; others get a refusal only they see. Once decided, the pause is edited to
say who did what, without its buttons."""

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
from bots.chat.pause import (
    STOP_LABEL,
    added,
    extend_label,
    extended_text,
    pause_text,
    stopped_text,
)
from bots.chat.ports import Rendered
from bots.slack.context import SlackContext
from bots.slack.text import escape, truncate
from core.runs.approval import may_decide
from core.runs.budget import extend_run, stop_run

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
    only, with people marked by ``person`` (a user id) shown by name."""

    def __init__(
        self,
        ctx: SlackContext,
        refuse: Callable[[dict[str, Any], str], Awaitable[None]],
        person: Callable[[str], str],
    ) -> None:
        self.ctx, self.refuse, self.person = ctx, refuse, person
        ctx.app.action(EXTEND)(self._on_extend)
        ctx.app.action(STOP)(self._on_stop)

    async def _on_extend(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        self.ctx.spawn(self.decide(body, extend=True))

    async def _on_stop(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        self.ctx.spawn(self.decide(body, extend=False))

    async def decide(self, body: dict[str, Any], *, extend: bool) -> None:
        """A click → extend or stop the run (if the clicker may) → the pause edited to say
        so; or a refusal (not allowed; already extended, stopped or over: core's reason)."""
        svc = self.ctx.svc
        user, action = body["user"]["id"], body["actions"][0]
        run_id = action["value"]
        refusal = may_decide(svc.settings, await svc.store.get_run(run_id), user, self.person)
        if refusal is not None:
            await self.refuse(body, refusal)
            return
        step = await (extend_run(svc, run_id, user) if extend else stop_run(svc, run_id, user))
        if not step.ok:
            verb = "extended" if extend else "stopped"
            await self.refuse(body, f"Not {verb}: {step.reason}.")
            return
        who = f"<@{escape(user)}>"
        if extend:
            what = str(action.get("block_id", "")).split(":")[1:2] or ["cost"]
            outcome = extended_text(who, escape(added(what[0], svc.settings.humans)))
        else:
            outcome = stopped_text(who)
        said = body["message"].get("text") or ""
        blocks = [
            SectionBlock(text=MarkdownTextObject(text=truncate(said))),
            SectionBlock(text=MarkdownTextObject(text=f"*{outcome}*")),
        ]
        await self.ctx.client.chat_update(
            channel=body["channel"]["id"],
            ts=body["message"]["ts"],
            text=f"{said}\n{outcome}",
            blocks=[b.to_dict() for b in blocks],
        )
