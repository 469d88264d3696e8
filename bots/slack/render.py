"""How the chat layer's intentions look in Slack: mrkdwn, escaped, in pieces of one
section (3,000 characters), with Block Kit for the card, the status message (Cancel) and
the result (feedback buttons)."""

from __future__ import annotations

import re
from typing import Any, assert_never

from slack_sdk.models.blocks import Block

from bots.chat.approvals import ToolApproval
from bots.chat.intentions import Form, Paused, SpendAsk
from bots.chat.ports import (
    Artifacts,
    Card,
    ChatPost,
    Intention,
    Milestone,
    Note,
    Notify,
    Question,
    Rendered,
    Result,
    StatusLine,
)
from bots.slack.approvals import approval_message
from bots.slack.assistant import assistant_status
from bots.slack.blocks import fallback_text, proposal_blocks, result_blocks, status_blocks
from bots.slack.budget import paused_message
from bots.slack.forms import form_message
from bots.slack.inspector import with_link
from bots.slack.names import content
from bots.slack.progress import plan_payload
from bots.slack.schedules import repeat_block
from bots.slack.spend_asks import ask_message
from bots.slack.stream import streamed_message
from bots.slack.text import SECTION_LIMIT, escape, split
from bots.slack.upload import preview
from core.types.figures import cost, tokens
from core.types.run import RunStatus

_LEVELS = {"info": "", "warning": ":warning: ", "error": ":x: "}
# A Slack user id, as agents may write it ("U012ABC", "@U012ABC", "<@U012ABC>").
_USER_ID = re.compile(r"<?@?([UW][A-Z0-9]{6,})>?")


def _dicts(blocks: list[Block]) -> list[dict[str, Any]]:
    return [b.to_dict() for b in blocks]


def _person(who: str) -> str:
    """A Slack user id as a mention (notifying them), anything else as plain text."""
    found = _USER_ID.fullmatch(who.strip())
    return f"<@{found.group(1)}>" if found else escape(who)


class SlackRenderer:
    """The chat layer's :class:`~bots.chat.ports.Renderer` for Slack."""

    message_chars = SECTION_LIMIT

    def escape(self, text: str) -> str:
        return escape(text)

    def bold(self, name: str) -> str:
        return f"*{content(name)}*"

    def split(self, text: str) -> list[str]:
        return split(text, SECTION_LIMIT)

    def _plain(self, text: str) -> list[Rendered]:
        return [Rendered(piece) for piece in self.split(text)]

    def render(self, intention: Intention) -> list[Rendered]:
        match intention:
            case StatusLine():
                line = self.status_line(intention)
                blocks = status_blocks(line, intention.run_id, running=intention.running)
                shown = with_link(_dicts(blocks), intention.link)
                # Beside the blocks: the thread's assistant status (bots.slack.assistant).
                # Beside them: its plan and tasks, streamed where Slack can (bots.slack.progress).
                extra = {
                    "assistant": assistant_status(intention),
                    "progress": plan_payload(intention),
                }
                return [Rendered(line, {"blocks": shown, **extra})]
            case Card(view=card, link=link):
                blocks = proposal_blocks(card)
                return [Rendered(fallback_text(card), with_link(_dicts(blocks), link))]
            case Milestone(agent=agent, reason=reason, text=text):
                return self._plain(f"{self.bold(agent)} {reason}:\n{content(text)}")
            case Question(agent=agent, text=text):
                return self._plain(f":question: {self.bold(agent)} asks: {content(text)}")
            case Note(text=text, level=level):
                return self._plain(_LEVELS[level] + content(text))
            case Notify(agent=agent, who=who, text=text):
                return self._plain(f":bell: {self.bold(agent)} for {_person(who)}: {content(text)}")
            case ChatPost(agent=agent, text=text, filename=filename):
                named = f" ({escape(filename)})" if filename else ""
                return self._plain(f"{self.bold(agent)}{named}:\n{content(text)}")
            case Result():
                return self.result(intention)
            case Artifacts():
                return []  # the files speak for themselves
            case Paused():
                return [paused_message(intention)]
            case Form():
                return [form_message(intention)]
            case ToolApproval():
                return [approval_message(intention)]
            case SpendAsk():
                return [ask_message(intention)]  # with Approve spending / Deny
            case _:
                assert_never(intention)

    def status_line(self, s: StatusLine) -> str:
        """One line: what happens now, then the counts."""
        if s.phase == "starting":
            now = "Starting…"
        elif s.phase == "ended":
            now = f"Run {s.outcome} · {tokens(s.tokens)} · {cost(s.cost_usd)}"
        else:
            tool = f" `{content(s.tool)}`" if s.tool else ""
            now = f"Running: {content(s.who)} {s.doing}{tool}"
        return f"{now} · agents {s.finished}/{s.agents} done · tool calls {s.tool_calls}"

    def result(self, r: Result) -> list[Rendered]:
        """The result in pieces (or, when it went up as a file, a preview), the last with
        the feedback buttons of a rateable run; streamed, one message (bots.slack.stream)."""
        if r.streamed:
            return [streamed_message(r)]
        body = ("" if r.status is RunStatus.COMPLETED else ":x: ") + content(r.text)
        *head, last = [preview(body)] if r.file else self.split(body)
        buttons = _dicts(result_blocks(last, r.run_id)) if r.rateable else None
        if buttons is not None:  # "Run this every…" (bots.slack.schedules)
            buttons.append(repeat_block(r.run_id))
        return [Rendered(p) for p in head] + [Rendered(last, buttons)]
