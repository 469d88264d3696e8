"""The clicks on a form an MCP server asks for, in Slack (``bots.slack.forms`` draws
it): Fill in opens the modal (at once: Slack's trigger_id lasts 3 s), its submission,
Done / Confirm and Decline → ``core.runs.people.open_form`` / ``answer_form`` by the
person who clicked; the form's message redrawn to say who answered."""

from __future__ import annotations

import json
from typing import Any

from slack_bolt.async_app import AsyncAck
from slack_sdk.models.blocks import MarkdownTextObject, SectionBlock

from bots.chat.ports import Place, Rendered
from bots.slack.context import SlackContext
from bots.slack.forms import ACCEPT, DECLINE, FILL, FORM_VIEW, form_view, typed_of
from bots.slack.mentions import MENTIONS, shown
from bots.slack.text import escape, truncate
from core.runs import people
from core.runs.forms import Action
from core.runs.outcomes import Done, FormInvalid, Refused


class FormButtons:
    """The form listeners, added to ``ctx.app``."""

    def __init__(self, ctx: SlackContext) -> None:
        self.ctx = ctx
        ctx.app.action(FILL)(self._on_fill)
        ctx.app.action(ACCEPT)(self._on_accept)
        ctx.app.action(DECLINE)(self._on_decline)
        ctx.app.view(FORM_VIEW)(self._on_submit)

    async def _refuse(self, body: dict[str, Any], text: str) -> None:
        message = body["message"]
        await self.ctx.client.chat_postEphemeral(
            channel=body["channel"]["id"],
            user=body["user"]["id"],
            thread_ts=message.get("thread_ts") or message["ts"],
            text=shown(text),
        )

    async def _on_fill(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        run_id, form_id = body["actions"][0]["value"].split("|", 1)
        person = self.ctx.people.known(body["user"]["id"])
        opened = await people.open_form(self.ctx.svc, run_id, form_id, person, who=MENTIONS)
        if isinstance(opened, Refused):
            await self._refuse(body, opened.reason)
            return
        message = body["message"]
        meta = {
            "run": run_id,
            "form": form_id,
            "channel": body["channel"]["id"],
            "ts": message["ts"],
            "thread": message.get("thread_ts") or message["ts"],
            "text": (message.get("text") or "")[:1500],
        }
        view = form_view(opened.fields, opened.message, opened.server, meta)
        await self.ctx.client.views_open(trigger_id=body["trigger_id"], view=view)

    async def _on_accept(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        self.ctx.spawn(self._click(body, "accept"))

    async def _on_decline(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        self.ctx.spawn(self._click(body, "decline"))

    async def _click(self, body: dict[str, Any], action: Action) -> None:
        """Done / Confirm (accept, nothing typed) or Decline."""
        run_id, form_id = body["actions"][0]["value"].split("|", 1)
        user = body["user"]["id"]
        person = await self.ctx.people.person(user)
        outcome = await people.answer_form(
            self.ctx.svc, run_id, form_id, person, action, who=MENTIONS
        )
        if isinstance(outcome, Done):
            message = body["message"]
            place = Place(body["channel"]["id"], message.get("thread_ts") or message["ts"])
            text = message.get("text") or ""
            await self._answered(run_id, place, message["ts"], text, outcome, user)
        else:
            reason = outcome.reason if isinstance(outcome, Refused) else " ".join(outcome.lines)
            await self._refuse(body, reason)

    async def _on_submit(self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        """The modal sent: answered (the modal closes), or the problems under their
        fields (a refusal that is about no field goes under the first one)."""
        meta = json.loads(view["private_metadata"])
        user = body["user"]["id"]
        svc = self.ctx.svc
        person = self.ctx.people.known(user)  # Slack wants the answer within 3 s
        opened = await people.open_form(svc, meta["run"], meta["form"], person, who=MENTIONS)
        if isinstance(opened, Refused):
            await ack(response_action="errors", errors=_first(view, opened.reason))
            return
        typed = typed_of(opened.fields, view["state"]["values"])
        outcome = await people.answer_form(
            svc, meta["run"], meta["form"], person, "accept", typed, who=MENTIONS
        )
        if isinstance(outcome, FormInvalid):
            errors: dict[str, str] = {}
            for p in outcome.problems:
                errors.setdefault(f"f:{p.field}"[:255], p.text)
            await ack(response_action="errors", errors=errors)
            return
        if isinstance(outcome, Refused):
            await ack(response_action="errors", errors=_first(view, outcome.reason))
            return
        await ack()
        place = Place(meta["channel"], meta["thread"])
        self.ctx.spawn(self._answered(meta["run"], place, meta["ts"], meta["text"], outcome, user))

    async def _answered(
        self, run_id: str, place: Place, ts: str, text: str, done: Done, user: str
    ) -> None:
        said = done.said.render(escape, f"<@{escape(user)}>")
        blocks = [
            SectionBlock(text=MarkdownTextObject(text=truncate(text or "📝"))),
            SectionBlock(text=MarkdownTextObject(text=f"*{said}*")),
        ]
        redrawn = Rendered(f"{text}\n{said}", [b.to_dict() for b in blocks])
        await self.ctx.redraws.redraw(run_id, place, ts, redrawn, "answered form")


def _first(view: dict[str, Any], reason: str) -> dict[str, str]:
    """``reason`` under the modal's first input."""
    inputs = [b["block_id"] for b in view.get("blocks", []) if b.get("type") == "input"]
    return {inputs[0]: reason[:1500]} if inputs else {}
