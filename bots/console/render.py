"""The console's look for the chat layer's intentions (``bots.chat.ports.Renderer``): rich
markup for the terminal, escaped (control bytes written out: ``bots.console.text``), and
a JSON payload saying how the terminal draws it (``bots.console.transport``):

- none: a line of markup, printed;
- ``{"kind": "status", "running": …}``: the run's live status line (the spinner's text);
- ``{"kind": "panel", "title": …, "border": …, "body": "markdown" | "text"}``: a box
  (the result, an agent's post), the text inside as Markdown or as plain text;
- ``{"kind": "card", "view": …}``: the proposal card (``bots.console.card``).

A terminal has no message limit: nothing is split. May call: ``bots.chat`` (intentions,
pause words), ``bots.console.card`` and ``text``. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any, assert_never

from bots.chat.approvals import ToolApproval
from bots.chat.intentions import Form, Paused, SpendAsk
from bots.chat.pause import extend_label, spent
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
from bots.console.card import shorten
from bots.console.person import named
from bots.console.text import escape, printable
from bots.console.tool_approvals import approval_lines
from core.types.figures import cost, tokens
from core.types.run import RunStatus

# A milestone is one line under its agent's end (the trace says the agent finished).
MILESTONE_CHARS = 160
_NOTES = {"info": "  [dim]{}[/]", "warning": "  [bold red]! {}[/]", "error": "  [bold red]✗ {}[/]"}


def panel(text: str, title: str, border: str, *, markdown: bool = True) -> Rendered:
    """A box titled ``title`` (markup) around ``text`` (Markdown, or plain text)."""
    body = "markdown" if markdown else "text"
    return Rendered(text, {"kind": "panel", "title": title, "border": border, "body": body})


class ConsoleRenderer:
    """Pure: intentions → messages for the terminal."""

    def escape(self, text: str) -> str:
        return escape(text)

    def bold(self, name: str) -> str:
        return f"[bold]{escape(name)}[/]"

    def split(self, text: str) -> list[str]:
        return [text]

    def render(self, intention: Intention) -> list[Rendered]:
        match intention:
            case StatusLine():
                return [self.status(intention)]
            case Card(view=view):
                payload = {"kind": "card", "view": view.model_dump(mode="json")}
                return [Rendered(f"Proposal for {escape(named(view.requested_by))}", payload)]
            case Milestone(text=text):
                return [Rendered(f"    [dim]└ {escape(shorten(text, MILESTONE_CHARS))}[/]")]
            case Question(agent=agent, text=text):
                return [Rendered(f"  [bold yellow]? {escape(agent)} asks:[/] {escape(text)}")]
            case Note(text=text, level=level):
                return [Rendered(_NOTES[level].format(escape(text)))]
            case Notify(agent=agent, who=who, text=text):
                return [Rendered(f"  🔔 {escape(agent)} → {escape(who)}: {escape(text)}")]
            case ChatPost(agent=agent, text=text, filename=filename):
                with_file = f" · {escape(filename)}" if filename else ""
                return [panel(printable(text), f"{escape(agent)} posted{with_file}", "blue")]
            case Result():
                return [self.result(intention)]
            case Artifacts(files=files):
                return [Rendered(f"[bold]Files the agents made[/] ({len(files)}):")]
            case Paused():
                return [Rendered(self.paused(intention))]
            case Form():
                return []  # asked by the run's console (bots.console.forms)
            case ToolApproval():
                return [Rendered(approval_lines(intention))]
            case SpendAsk():
                return [Rendered(_NOTES["warning"].format(escape(intention.text)))]
            case _:
                assert_never(intention)

    def status(self, s: StatusLine) -> Rendered:
        """The live line: what happens now, then the counts."""
        counts = f"agents {s.finished}/{s.agents} done · tool calls {s.tool_calls}"
        match s.phase:
            case "starting":
                now = "Starting…"
            case "running":
                tool = f" {escape(s.tool)}" if s.tool else ""
                now = f"{escape(s.who)} {escape(s.doing)}{tool}"
            case "ended":
                now = f"Run {s.outcome} · {tokens(s.tokens)} · {cost(s.cost_usd)}"
            case _:
                assert_never(s.phase)
        payload: dict[str, Any] = {"kind": "status", "running": s.running}
        return Rendered(f"{now} · {counts}", payload)

    def result(self, r: Result) -> Rendered:
        """The result in a box titled with the run's end and what it cost (green when it
        completed); why it did not, in red."""
        ok = r.status is RunStatus.COMPLETED
        text = printable(r.text)
        if r.file:
            text = f"{text[:1500]}\n\n(the whole result is in {printable(r.file)} above)"
        title = f"{r.status.value} · {tokens(r.tokens)} · {cost(r.cost_usd)}"
        return panel(text, title, "green" if ok else "red", markdown=ok)

    def paused(self, p: Paused) -> str:
        """``⏸ paused: the run spent $2.00 of $1.50 — extend by $2.00, or stop here``."""
        extend = extend_label(p)
        return (
            f"  [bold yellow]⏸ paused: {escape(spent(p))}[/] — "
            f"{escape(extend[0].lower() + extend[1:])}, or stop here"
        )
