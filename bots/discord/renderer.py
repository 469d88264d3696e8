"""Discord's look for the chat layer's intentions (``bots.chat.ports``): Discord
markdown, escaped, in messages of at most 2,000 characters; the proposal card as a
Components V2 layout. The payload (stored as JSON in the run's outbox) says what the
transport adds: ``layout`` (``bots.discord.card``: the whole message), ``buttons``
(``card``: Approve / Edit / Reject; ``cancel``; ``none``: remove them) for run ``run``,
and ``rate``: the run whose 👍/👎 the message collects."""

from __future__ import annotations

from typing import Any, assert_never

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
from bots.discord.budget import paused_message
from bots.discord.card import proposal_layout
from bots.discord.forms import form_message
from bots.discord.spend import ask_message
from bots.discord.text import MESSAGE_LIMIT, escape, split, truncate
from bots.discord.tool_approvals import approval_message
from core.types.figures import cost, tokens
from core.types.run import RunStatus

CARD_TEXT = "Here is my proposal: approve, edit or reject it."
_NOTE_MARK = {"info": "", "warning": "⚠️ ", "error": "❌ "}
# A long result's preview, when the whole goes up as a file.
PREVIEW_CHARS = 1500
ANSWER_HINT = "-# Reply in this thread to answer."


class DiscordRenderer:
    """Pure: intentions → messages."""

    def escape(self, text: str) -> str:
        return escape(text)

    def bold(self, name: str) -> str:
        return f"**{escape(name)}**"

    def split(self, text: str) -> list[str]:
        return split(text, MESSAGE_LIMIT)

    def _texts(self, text: str) -> list[Rendered]:
        return [Rendered(piece) for piece in self.split(text)]

    def status(self, s: StatusLine) -> Rendered:
        counts = f"agents {s.finished}/{s.agents} done · tool calls {s.tool_calls}"
        match s.phase:
            case "starting":
                line = f"⏳ Starting… · {counts}"
            case "running":
                tool = f" `{escape(s.tool)}`" if s.tool else ""
                line = f"⚙️ Running: {self.bold(s.who)} {escape(s.doing)}{tool} · {counts}"
            case "ended":
                spent = f"{tokens(s.tokens)} · {cost(s.cost_usd)}"
                line = f"🏁 Run {escape(s.outcome)} · {spent} · {counts}"
            case _:
                assert_never(s.phase)
        buttons = "cancel" if s.running else "none"
        payload = {"buttons": buttons, "run": s.run_id} | ({"link": s.link} if s.link else {})
        return Rendered(truncate(line, MESSAGE_LIMIT), payload)

    def render(self, intention: Intention) -> list[Rendered]:
        match intention:
            case StatusLine():
                return [self.status(intention)]
            case Card(view=view, link=link):
                payload: dict[str, Any] = {
                    "layout": proposal_layout(view),
                    "buttons": "card",
                    "run": view.run_id,
                } | ({"link": link} if link else {})
                return [Rendered(CARD_TEXT, payload)]
            case Milestone(agent=agent, reason=reason, text=text):
                return self._texts(f"{self.bold(agent)} {escape(reason)}:\n{escape(text)}")
            case Question(agent=agent, text=text):
                ask = f"❓ {self.bold(agent)} asks: {escape(text)}\n{ANSWER_HINT}"
                return self._texts(ask)
            case Note(text=text, level=level):
                return self._texts(_NOTE_MARK[level] + escape(text))
            case Notify(agent=agent, who=who, text=text):
                return self._texts(f"🔔 {self.bold(agent)} for {escape(who)}: {escape(text)}")
            case ChatPost(agent=agent, text=text, filename=filename):
                if filename:
                    return [Rendered(f"{self.bold(agent)} sent {escape(filename)}.")]
                return self._texts(f"{self.bold(agent)}:\n{escape(text)}")
            case Result():
                return self._result(intention)
            case Artifacts(files=files):
                n = len(files)
                return [Rendered(f"📎 {n} file{'' if n == 1 else 's'} the agents made:")]
            case Paused():
                return [paused_message(intention)]
            case Form():
                return [form_message(intention)]
            case ToolApproval():
                return [approval_message(intention)]
            case SpendAsk():
                return [ask_message(intention)]
            case _:
                assert_never(intention)

    def _result(self, r: Result) -> list[Rendered]:
        ok = r.status is RunStatus.COMPLETED
        body = escape(r.text or ("(no result)" if ok else r.status.value))
        text = body if ok else f"❌ {body}"
        if r.file:
            note = f"\n\n(the whole result is in {escape(r.file)} above)"
            pieces = [truncate(text, PREVIEW_CHARS) + note]
        else:
            pieces = self.split(text)
        out = [Rendered(p) for p in pieces]
        if r.rateable:
            hint = "\n-# React 👍 or 👎 to rate this result."
            last = out[-1].text
            last = last + hint if len(last) + len(hint) <= MESSAGE_LIMIT else last
            out[-1] = Rendered(last, {"rate": r.run_id})
        if ok:
            # "Run this every…" under the result (bots.discord.schedule_items).
            payload = out[-1].payload if isinstance(out[-1].payload, dict) else {}
            out[-1] = Rendered(out[-1].text, {**payload, "every": r.run_id})
        return out
