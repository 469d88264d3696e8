"""The web chat's look for the chat layer's intentions (``bots.chat.ports``): plain text
(the page's templates escape it) and a payload saying what the page shows beside it —
``kind`` (status, card, milestone, question, note, notify, post, result, files), the run,
and the card's data or the buttons (``cancel`` on a running status line, ``rate`` on a
result)."""

from __future__ import annotations

from typing import Any, assert_never

from bots.chat.approvals import ToolApproval, headline
from bots.chat.intentions import Form, Paused, SpendAsk
from bots.chat.pause import STOP_LABEL, extend_label, pause_text
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
from bots.web.chat_approvals import approval_payload
from bots.web.chat_spend import ask_payload
from bots.web.form_render import form_message
from core.types import figures
from core.types.run import RunStatus

# One message shows at most this much; longer texts go in several.
MESSAGE_CHARS = 20_000


class WebRenderer:
    """Pure: intentions → messages. Text stays plain: the page escapes it."""

    def escape(self, text: str) -> str:
        return text

    def bold(self, name: str) -> str:
        return name

    def split(self, text: str) -> list[str]:
        return [text[i : i + MESSAGE_CHARS] for i in range(0, len(text), MESSAGE_CHARS)] or [""]

    def _texts(self, text: str, kind: str, **extra: Any) -> list[Rendered]:
        return [Rendered(piece, {"kind": kind, **extra}) for piece in self.split(text)]

    def render(self, intention: Intention) -> list[Rendered]:
        match intention:
            case StatusLine():
                return [self._status(intention)]
            case Card(view=view):
                payload = {"kind": "card", "run": view.run_id, "view": view.model_dump(mode="json")}
                return [Rendered("Here is my proposal: approve, edit or reject it.", payload)]
            case Milestone(agent=agent, reason=reason, text=text):
                return self._texts(text, "milestone", agent=agent, reason=reason)
            case Question(agent=agent, text=text):
                return self._texts(text, "question", agent=agent)
            case Note(text=text, level=level):
                return self._texts(text, "note", level=level)
            case Notify(agent=agent, who=who, text=text):
                return self._texts(text, "notify", agent=agent, who=who)
            case ChatPost(agent=agent, text=text, filename=filename):
                if filename:
                    return [Rendered(f"{agent} sent {filename}.", {"kind": "note"})]
                return self._texts(text, "post", agent=agent)
            case Result():
                return self._result(intention)
            case Artifacts(files=files):
                n = len(files)
                return [Rendered(f"{n} file{'' if n == 1 else 's'} the agents made:")]
            case Paused(run_id=run_id):
                buttons = {"extend": extend_label(intention), "stop": STOP_LABEL}
                payload = {"kind": "paused", "run": run_id, **buttons}
                return [Rendered(pause_text(intention), payload)]
            case Form():
                return [form_message(intention)]
            case ToolApproval():
                return [Rendered(headline(intention), approval_payload(intention))]
            case SpendAsk():
                return [Rendered(intention.text, ask_payload(intention))]
            case _:
                assert_never(intention)

    def _status(self, s: StatusLine) -> Rendered:
        agents = f"{s.finished} of {s.agents} agents done" if s.agents else ""
        calls = f"{figures.number(s.tool_calls)} tool call{'' if s.tool_calls == 1 else 's'}"
        counts = " · ".join(c for c in (agents, calls) if c)
        match s.phase:
            case "starting":
                line = "Starting the agents…"
            case "running":
                tool = f" {s.tool}" if s.tool else ""
                line = f"{s.who} {s.doing}{tool} · {counts}".strip()
            case "ended":
                spent = f"{figures.tokens(s.tokens)} · {figures.cost(s.cost_usd)}"
                line = f"Run {s.outcome} · {counts} · {spent}"
            case _:
                assert_never(s.phase)
        payload = {"kind": "status", "run": s.run_id, "cancel": s.running, "phase": s.phase}
        return Rendered(line, payload)

    def _result(self, r: Result) -> list[Rendered]:
        ok = r.status is RunStatus.COMPLETED
        text = r.text or ("(no result)" if ok else r.status.value)
        if not ok:
            text = f"{r.status.value.capitalize()}: {text}"
        if r.file:
            text = f"{text[:1500]}\n\n(the whole result is in {r.file} above)"
        out = self._texts(text, "result", ok=ok, run=r.run_id)
        if r.rateable:
            last = out[-1].payload
            payload: dict[str, Any] = dict(last) if isinstance(last, dict) else {}
            payload["rate"] = r.run_id
            out[-1] = Rendered(out[-1].text, payload)
        return out
