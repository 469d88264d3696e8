"""People deciding about a run from Slack: Approve / Reject / Edit on the card, Cancel on
the status message. Each is a click → one core call → the card updated or a refusal
shown only to the person who clicked."""

from __future__ import annotations

import json
import re
from typing import Any

from slack_bolt.async_app import AsyncAck
from slack_sdk.models.blocks import ContextBlock, MarkdownTextObject

from bots.chat.links import run_link
from bots.slack.blocks import (
    APPROVE,
    CANCEL,
    EDIT,
    REJECT,
    fallback_text,
    outcome_blocks,
    proposal_blocks,
)
from bots.slack.budget import BudgetButtons
from bots.slack.context import SlackContext
from bots.slack.edit import (
    EDIT_VIEW,
    FormProblems,
    edit_from_values,
    edit_view,
    form_errors,
)
from bots.slack.inspector import with_link
from bots.slack.text import escape
from core.runs import approval
from core.runs.approval import Approve, Decision, ProposalView, Reject, decide, may_decide
from core.runs.control import cancel_run
from core.runs.edits import EditProblem, agents_of


class Decisions:
    """The decision listeners, added to ``ctx.app``."""

    def __init__(self, ctx: SlackContext) -> None:
        self.ctx = ctx
        app = ctx.app
        app.action(APPROVE)(self._on_approve)
        app.action(REJECT)(self._on_reject)
        app.action(CANCEL)(self._on_cancel)
        app.action(EDIT)(self._on_edit)
        app.view(EDIT_VIEW)(self._on_edit_submit)
        self.budget = BudgetButtons(ctx, self._refuse, _person)

    async def _refuse(self, body: dict[str, Any], text: str) -> None:
        message = body["message"]
        await self.ctx.client.chat_postEphemeral(
            channel=body["channel"]["id"],
            user=body["user"]["id"],
            thread_ts=message.get("thread_ts") or message["ts"],
            text=_MENTION.sub(r"<@\1>", escape(text)),
        )

    async def _on_approve(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        self.ctx.spawn(self.decide(body, Approve()))

    async def _on_reject(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        self.ctx.spawn(self.decide(body, Reject()))

    async def _on_cancel(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        self.ctx.spawn(self.cancel(body))

    async def decide(self, body: dict[str, Any], decision: Decision) -> None:
        """A button click → ``core.runs.approval.decide`` → the card updated, or a refusal."""
        svc = self.ctx.svc
        user, run_id = body["user"]["id"], body["actions"][0]["value"]
        outcome = await decide(svc, run_id, user, decision, who=_person)
        if not outcome.ok:
            await self._refuse(body, outcome.message)
            return
        approved = isinstance(decision, Approve)
        verb = "Approved" if approved else "Rejected"
        card = approval.view(svc.settings, outcome.run, svc.tools)
        await self.ctx.client.chat_update(
            channel=body["channel"]["id"],
            ts=body["message"]["ts"],
            text=f"{verb}: {fallback_text(card)}",
            blocks=with_link(
                [b.to_dict() for b in outcome_blocks(card, f"*{verb} by <@{escape(user)}>.*")],
                run_link(svc.settings, run_id) or "",
            ),
        )

    async def cancel(self, body: dict[str, Any]) -> None:
        """Cancel → ``core.runs.control.cancel_run`` (same people as for approving); the relay
        then shows the run as cancelled."""
        svc = self.ctx.svc
        user, run_id = body["user"]["id"], body["actions"][0]["value"]
        reason = may_decide(svc.settings, await svc.store.get_run(run_id), user, _person)
        if reason is None:
            step = await cancel_run(svc, run_id, user)
            reason = None if step.ok else step.reason
        if reason is not None:
            await self._refuse(body, reason)

    async def _on_edit(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """Open the form at once: Slack's trigger_id is valid for 3 s."""
        await ack()
        svc = self.ctx.svc
        user, run_id = body["user"]["id"], body["actions"][0]["value"]
        run = await svc.store.get_run(run_id)
        refusal = may_decide(svc.settings, run, user, _person)
        if refusal is not None:
            await self._refuse(body, refusal)
            return
        meta = {"run": run_id, "channel": body["channel"]["id"], "ts": body["message"]["ts"]}
        form = edit_view(agents_of(run), svc.tools.names(), meta)
        await self.ctx.client.views_open(trigger_id=body["trigger_id"], view=form)

    async def _on_edit_submit(
        self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]
    ) -> None:
        """Apply the form through core; its refusals are shown in the form."""
        svc = self.ctx.svc
        meta = json.loads(view["private_metadata"])
        user = body["user"]["id"]
        agents = agents_of(await svc.store.get_run(meta["run"]))
        try:
            change = edit_from_values(agents, view["state"]["values"])
        except FormProblems as exc:
            await ack(response_action="errors", errors=form_errors(agents, exc.problems))
            return
        outcome = await decide(svc, meta["run"], user, change)
        if not outcome.ok:
            # A refusal that is not about one field (not allowed, decided meanwhile) goes
            # under the first agent's instructions.
            problems = outcome.problems or (
                EditProblem(
                    agent_id=agents[0].id,
                    agent_name=agents[0].name,
                    field="prompt",
                    message=outcome.message,
                ),
            )
            await ack(response_action="errors", errors=form_errors(agents, problems))
            return
        await ack()
        card = approval.view(svc.settings, outcome.run, svc.tools)
        self.ctx.spawn(self._edited(meta, card, user))

    async def _edited(self, meta: dict[str, str], card: ProposalView, user: str) -> None:
        blocks = proposal_blocks(card)
        note = ContextBlock(elements=[MarkdownTextObject(text=f"Edited by <@{escape(user)}>.")])
        await self.ctx.client.chat_update(
            channel=meta["channel"],
            ts=meta["ts"],
            text=fallback_text(card),
            blocks=with_link(
                [b.to_dict() for b in [*blocks[:-1], note, blocks[-1]]],
                run_link(self.ctx.svc.settings, card.run_id) or "",
            ),
        )


def _person(user_id: str) -> str:
    """A user id marked so that, after the text is escaped, :data:`_MENTION` turns it into
    a mention: Slack shows the person's name (in a message only the clicker sees, it
    pings nobody)."""
    return f"\x00{user_id}\x00"


# Only Slack user ids (letters and digits) become mentions; anything else stays as text.
_MENTION = re.compile(r"\x00([A-Z0-9]{2,32})\x00")
