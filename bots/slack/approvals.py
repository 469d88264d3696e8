"""A tool call waiting for approval, in Slack: the request (the tool in plain words, its
arguments with secrets masked, the agent's reason) with Approve once / Approve for this
run / Deny (Block Kit; each button's value is ``<run id>|<approval id>``); Deny opens a
modal for the reason the agent reads. Each click → ``core.runs.people.approve_action``
by the person who clicked (who may, once per call: the people room's rule); a refusal
only the clicker sees. Once decided, the message is redrawn through the run's outbox
saying who decided, without its buttons."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncAck
from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    InputBlock,
    MarkdownTextObject,
    PlainTextInputElement,
    SectionBlock,
)
from slack_sdk.models.views import View

from bots.chat.approvals import (
    DENY_LABEL,
    ONCE_LABEL,
    REASON_LABEL,
    RUN_LABEL,
    ToolApproval,
    decided_text,
    headline,
    tool_approval,
)
from bots.chat.ports import Place, Rendered
from bots.slack.context import SlackContext
from bots.slack.mentions import MENTIONS
from bots.slack.names import content
from bots.slack.text import escape, truncate
from core.runs import people
from core.runs.outcomes import ActionDecided, Refused
from core.types.approvals import Choice

ONCE, RUN, DENY = "caramba_tool_once", "caramba_tool_run", "caramba_tool_deny"
DENY_VIEW = "caramba_tool_deny_form"
_CHOICES: dict[str, Choice] = {ONCE: "once", RUN: "run"}


def approval_message(a: ToolApproval, decided: str = "") -> Rendered:
    """The request; with ``decided`` (mrkdwn, already rendered), that line instead of
    the buttons."""
    text = content(headline(a))
    why = f"\n*Why:* {content(a.reason)}" if a.reason else ""
    args = f"\n```{content(a.arguments)}```" if a.arguments.strip() else ""
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=truncate(text + why + args)))]
    if decided:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=decided)]))
    else:
        value = f"{a.run_id}|{a.approval_id}"
        blocks.append(
            ActionsBlock(
                block_id=f"tool_approval:{a.approval_id}"[:255],
                elements=[
                    ButtonElement(text=ONCE_LABEL, action_id=ONCE, value=value, style="primary"),
                    ButtonElement(text=RUN_LABEL, action_id=RUN, value=value),
                    ButtonElement(text=DENY_LABEL, action_id=DENY, value=value, style="danger"),
                ],
            )
        )
    return Rendered(truncate(text), [b.to_dict() for b in blocks])


def deny_form(meta: dict[str, str]) -> View:
    """The modal asking why (optional): its answer is what the agent reads."""
    return View(
        type="modal",
        callback_id=DENY_VIEW,
        title="Deny this tool call",
        submit="Deny",
        close="Back",
        private_metadata=json.dumps(meta),
        blocks=[
            InputBlock(
                block_id="reason",
                label=REASON_LABEL,
                optional=True,
                element=PlainTextInputElement(action_id="text", multiline=True, max_length=500),
            )
        ],
    )


class ApprovalButtons:
    """The listeners on ``ctx.app``; ``refuse(body, text)`` tells the clicker only."""

    def __init__(
        self, ctx: SlackContext, refuse: Callable[[dict[str, Any], str], Awaitable[None]]
    ) -> None:
        self.ctx, self.refuse = ctx, refuse
        ctx.app.action(ONCE)(self._on_approve)
        ctx.app.action(RUN)(self._on_approve)
        ctx.app.action(DENY)(self._on_deny)
        ctx.app.view(DENY_VIEW)(self._on_deny_submit)

    async def _on_approve(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        action = body["actions"][0]
        run_id, approval_id = action["value"].split("|", 1)
        place = _place(body)
        choice = _CHOICES[action["action_id"]]
        self.ctx.spawn(self._decide(body, run_id, approval_id, choice, "", place, _ts(body)))

    async def _on_deny(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """Open the reason's form at once: Slack's trigger_id is valid for 3 s."""
        await ack()
        run_id, approval_id = body["actions"][0]["value"].split("|", 1)
        place = _place(body)
        meta = {"run": run_id, "approval": approval_id, "channel": place.channel,
                "thread": place.thread, "ts": _ts(body)}  # fmt: skip
        await self.ctx.client.views_open(trigger_id=body["trigger_id"], view=deny_form(meta))
        # The agent reads the denier's name: ask Slack for it while the form is open.
        self.ctx.spawn(self._learn(body["user"]["id"]))

    async def _learn(self, user: str) -> None:
        await self.ctx.people.name(user)

    async def _on_deny_submit(
        self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]
    ) -> None:
        meta = json.loads(view["private_metadata"])
        reason = view["state"]["values"].get("reason", {}).get("text", {}).get("value") or ""
        # Slack wants the answer within 3 s: the name is known by now, else waited for briefly.
        person = await self.ctx.people.person(body["user"]["id"], wait_s=1.0)
        # A form's error is plain text: people named by name, not as mentions.
        outcome = await people.approve_action(
            self.ctx.svc, meta["run"], meta["approval"], person, "deny", reason=reason,
            who=self.ctx.people,
        )  # fmt: skip
        if isinstance(outcome, Refused):
            await ack(response_action="errors", errors={"reason": outcome.reason[:150]})
            return
        await ack()
        place = Place(meta["channel"], meta["thread"])
        self.ctx.spawn(self._redraw(outcome, body["user"]["id"], place, meta["ts"]))

    async def _decide(
        self,
        body: dict[str, Any],
        run_id: str,
        approval_id: str,
        choice: Choice,
        reason: str,
        place: Place,
        ts: str,
    ) -> None:
        user = body["user"]["id"]
        person = await self.ctx.people.person(user)
        outcome = await people.approve_action(
            self.ctx.svc, run_id, approval_id, person, choice, reason=reason, who=MENTIONS
        )
        if isinstance(outcome, Refused):
            await self.refuse(body, outcome.reason)
            return
        await self._redraw(outcome, user, place, ts)

    async def _redraw(self, outcome: ActionDecided, user: str, place: Place, ts: str) -> None:
        """The request again, saying who decided (a mention) instead of its buttons."""
        line = decided_text(outcome.said.render(escape, f"<@{escape(user)}>"))
        request = outcome.request
        shown = tool_approval(request)
        done = approval_message(shown, decided=line)
        await self.ctx.redraws.redraw(request.run_id, place, ts, done, "decided tool approval")


def _ts(body: dict[str, Any]) -> str:
    return str(body["message"]["ts"])


def _place(body: dict[str, Any]) -> Place:
    message = body["message"]
    return Place(body["channel"]["id"], message.get("thread_ts") or message["ts"])
