"""People deciding about a run from Slack: Approve / Reject / Edit on the card, Cancel on
the status message. Each is a click → the clicker as a ``Person`` → one call of the
people room (``core.runs.people``, where the rules are) → the card redrawn through the
run's outbox (``bots.chat.redraw``), or the refusal shown only to the clicker."""

from __future__ import annotations

import json
from typing import Any

from slack_bolt.async_app import AsyncAck
from slack_sdk.models.blocks import ContextBlock, MarkdownTextObject

from bots.chat.links import run_link
from bots.chat.ports import Place, Rendered
from bots.slack.approvals import ApprovalButtons
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
from bots.slack.mentions import MENTIONS, shown
from bots.slack.spend_asks import SpendButtons
from bots.slack.text import escape
from core.runs import approval, people
from core.runs.approval import Approve, Decision, ProposalView, Reject
from core.runs.edits import EditProblem, agents_of
from core.runs.outcomes import Refused


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
        self.budget = BudgetButtons(ctx, self._refuse)
        self.tool_approvals = ApprovalButtons(ctx, self._refuse)
        self.spend_asks = SpendButtons(ctx, self._refuse)

    async def _refuse(self, body: dict[str, Any], text: str) -> None:
        message = body["message"]
        await self.ctx.client.chat_postEphemeral(
            channel=body["channel"]["id"],
            user=body["user"]["id"],
            thread_ts=message.get("thread_ts") or message["ts"],
            text=shown(text),
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
        """A button click → ``people.decide`` → the card redrawn without its buttons,
        saying who decided; or a refusal."""
        svc = self.ctx.svc
        user, run_id = body["user"]["id"], body["actions"][0]["value"]
        # Slack shows the decider as a mention: their name need not be asked for.
        person = self.ctx.people.known(user)
        outcome = await people.decide(svc, run_id, person, decision, who=MENTIONS)
        if isinstance(outcome, Refused):
            await self._refuse(body, outcome.reason)
            return
        verb = "Approved" if isinstance(decision, Approve) else "Rejected"
        card = approval.view(svc.settings, outcome.run, svc.tools)
        note = outcome.said.render(escape, f"<@{escape(user)}>")
        blocks = [b.to_dict() for b in outcome_blocks(card, f"*{note}*")]
        decided = Rendered(
            f"{verb}: {fallback_text(card)}",
            with_link(blocks, run_link(svc.settings, run_id) or ""),
        )
        await self.ctx.redraws.redraw(
            run_id, _place(body), body["message"]["ts"], decided, "decided card"
        )

    async def cancel(self, body: dict[str, Any]) -> None:
        """Cancel → ``people.cancel`` (the same people as for approving); the relay then
        shows the run as cancelled, by whom."""
        user, run_id = body["user"]["id"], body["actions"][0]["value"]
        person = await self.ctx.people.person(user)
        outcome = await people.cancel(self.ctx.svc, run_id, person, who=MENTIONS)
        if isinstance(outcome, Refused):
            await self._refuse(body, outcome.reason)

    async def _on_edit(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """Open the form at once: Slack's trigger_id is valid for 3 s."""
        await ack()
        svc = self.ctx.svc
        user, run_id = body["user"]["id"], body["actions"][0]["value"]
        person = self.ctx.people.known(user)
        opened = await people.editable(svc, run_id, person, who=MENTIONS)
        if isinstance(opened, Refused):
            await self._refuse(body, opened.reason)
            return
        meta = {
            "run": run_id,
            "channel": body["channel"]["id"],
            "ts": body["message"]["ts"],
            "thread": _place(body).thread,
        }
        form = edit_view(list(opened.agents), svc.tools.names(), meta)
        await self.ctx.client.views_open(trigger_id=body["trigger_id"], view=form)

    async def _on_edit_submit(
        self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]
    ) -> None:
        """Apply the form through the people room; its refusals are shown in the form."""
        svc = self.ctx.svc
        meta = json.loads(view["private_metadata"])
        user = body["user"]["id"]
        agents = agents_of(await svc.store.get_run(meta["run"]))
        try:
            change = edit_from_values(agents, view["state"]["values"])
        except FormProblems as exc:
            await ack(response_action="errors", errors=form_errors(agents, exc.problems))
            return
        # Slack wants the answer within 3 s: the name is what the process knows already.
        person = self.ctx.people.known(user)
        outcome = await people.decide(svc, meta["run"], person, change, who=MENTIONS)
        if isinstance(outcome, Refused):
            # A refusal that is not about one field (not allowed, decided meanwhile) goes
            # under the first agent's instructions.
            problems = outcome.problems or (
                EditProblem(
                    agent_id=agents[0].id,
                    agent_name=agents[0].name,
                    field="prompt",
                    message=outcome.reason,
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
        edited = Rendered(
            fallback_text(card),
            with_link(
                [b.to_dict() for b in [*blocks[:-1], note, blocks[-1]]],
                run_link(self.ctx.svc.settings, card.run_id) or "",
            ),
        )
        place = Place(meta["channel"], meta.get("thread") or meta["ts"])
        await self.ctx.redraws.redraw(card.run_id, place, meta["ts"], edited, "edited card")


def _place(body: dict[str, Any]) -> Place:
    """The thread of the message clicked."""
    message = body["message"]
    return Place(body["channel"]["id"], message.get("thread_ts") or message["ts"])
