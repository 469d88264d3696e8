"""A tool call waiting for approval, in Discord: the request (the tool in plain words,
its arguments with secrets masked, the agent's reason) with Approve once / Approve for
this run / Deny (persistent buttons ``caramba:tool:<once|run|deny>:<run>:<approval>``,
registered with the bot's other components); Deny opens a modal for the reason the
agent reads. Each click → ``core.runs.people.approve_action`` by the clicker (with
Discord's approvers by id or role: the people room's rule); a refusal only they see.
Once decided, the message is redrawn through the run's outbox saying who decided."""

from __future__ import annotations

import logging
import re
from typing import Any

import discord

from bots.chat.approvals import (
    DENY_LABEL,
    ONCE_LABEL,
    REASON_LABEL,
    RUN_LABEL,
    ToolApproval,
    decided_text,
)
from bots.chat.ports import Rendered
from bots.discord.approvals import WHO, named, person
from bots.discord.claims import Claimed
from bots.discord.layout import WAITING, text_layout
from bots.discord.run_clicks import RunClicks
from bots.discord.text import MESSAGE_LIMIT, escape, truncate
from bots.discord.views import RUN
from core.runs import people
from core.runs.outcomes import Refused
from core.types.approvals import Choice

log = logging.getLogger(__name__)
APPROVAL = r"(?P<approval>a-[0-9A-Za-z_-]{1,60})"
_LABELS: dict[str, tuple[str, discord.ButtonStyle]] = {
    "once": (ONCE_LABEL, discord.ButtonStyle.success),
    "run": (RUN_LABEL, discord.ButtonStyle.primary),
    "deny": (DENY_LABEL, discord.ButtonStyle.danger),
}


def approval_message(a: ToolApproval) -> Rendered:
    """The request; the transport adds the buttons (``buttons``: ``tool_approval``). The
    arguments go in a code block (shown as written; the transport allows no pings)."""
    risks = f" ({escape(', '.join(a.risks))})" if a.risks else ""
    head = f"🔐 **{escape(a.agent)}** wants to use `{a.tool}`: {escape(a.purpose)}{risks}"
    head = truncate(head, 600)
    why = truncate(f"\n**Why:** {escape(a.reason)}", 600) if a.reason else ""
    args = a.arguments.replace("```", "ʼʼʼ")
    budget = MESSAGE_LIMIT - len(head) - len(why) - 40
    if len(args) > budget:
        args = args[: max(budget, 0)] + "…"
    text = f"{head}{why}\n```json\n{args}\n```"
    payload = {"buttons": "tool_approval", "run": a.run_id, "approval": a.approval_id}
    return Rendered(text, payload | {"layout": text_layout(text, WAITING)})


class ToolButton(
    Claimed,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=rf"^caramba:tool:(?P<choice>once|run|deny):{RUN}:{APPROVAL}$",
):
    def __init__(self, choice: str, run_id: str, approval_id: str) -> None:
        label, style = _LABELS[choice]
        custom_id = f"caramba:tool:{choice}:{run_id}:{approval_id}"
        super().__init__(discord.ui.Button(label=label, style=style, custom_id=custom_id))
        self.choice, self.run_id, self.approval_id = choice, run_id, approval_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> ToolButton:
        return cls(match["choice"], match["run"], match["approval"])

    async def callback(self, interaction: discord.Interaction) -> None:
        decisions = getattr(interaction.client, "tool_approvals")  # noqa: B009
        if self.choice == "deny":
            await interaction.response.send_modal(DenyModal(self.run_id, self.approval_id))
            return
        choice: Choice = "once" if self.choice == "once" else "run"
        await decisions.decide(interaction, self.run_id, self.approval_id, choice, "")


class DenyModal(discord.ui.Modal):
    """Why the call is denied (optional): the agent reads it."""

    def __init__(self, run_id: str, approval_id: str) -> None:
        super().__init__(title="Deny this tool call", custom_id=f"caramba:deny:{approval_id}"[:100])
        self.run_id, self.approval_id = run_id, approval_id
        self.reason: discord.ui.TextInput[DenyModal] = discord.ui.TextInput(
            label=REASON_LABEL[:45],
            custom_id="reason",
            style=discord.TextStyle.paragraph,
            required=False,
            max_length=500,
        )
        self.add_item(self.reason)

    async def on_submit(self, interaction: discord.Interaction) -> None:
        decisions = getattr(interaction.client, "tool_approvals")  # noqa: B009
        reason = (self.reason.value or "").strip()
        await decisions.decide(interaction, self.run_id, self.approval_id, "deny", reason)


TOOL_ITEMS: tuple[type[discord.ui.DynamicItem[Any]], ...] = (ToolButton,)


def approval_items(payload: dict[str, Any]) -> list[discord.ui.Item[Any]]:
    """Approve once / Approve for this run / Deny under a request."""
    run_id, approval_id = str(payload.get("run", "")), str(payload.get("approval", ""))
    return [ToolButton(choice, run_id, approval_id) for choice in ("once", "run", "deny")]


class ToolApprovals(RunClicks):
    """The clicks' handler (the bot's ``tool_approvals``)."""

    async def decide(
        self,
        interaction: discord.Interaction,
        run_id: str,
        approval_id: str,
        choice: Choice,
        reason: str,
    ) -> None:
        await self._answered(
            interaction,
            f"a tool approval of {run_id}",
            lambda: self._decide(interaction, run_id, approval_id, choice, reason),
        )

    async def _decide(
        self,
        interaction: discord.Interaction,
        run_id: str,
        approval_id: str,
        choice: Choice,
        reason: str,
    ) -> None:
        svc = self.ctx.svc
        clicker = person(svc.settings.discord, interaction.user)
        outcome = await people.approve_action(
            svc, run_id, approval_id, clicker, choice, reason=reason, who=WHO
        )
        if isinstance(outcome, Refused):
            await self._tell(interaction, await named(self.ctx.links, outcome.reason))
            return
        line = decided_text(outcome.said.render(escape, f"**{escape(clicker.name)}**"))
        self._redraw_decided(interaction, run_id, line, "decided tool approval")
