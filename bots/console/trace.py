"""The run at work, event by event: what a chat thread leaves to the run's inspector page
(``bots.web``) and the console prints inline, between the thread's messages.

The run's thread (status, questions, notes, posts, the pause, the result, the files)
comes through the chat layer (``bots.console.thread``); the trace adds what it does not
show: the run starting, agents joining with their model and tools, what they say, their
tool calls, their messages to each other, their ends, an answered question, an error's
hint; and with ``verbose`` each turn, its tokens and the run's status changes.

Pure: an event → lines of rich markup, escaped (``bots.console.text``).
"""

from __future__ import annotations

from typing import assert_never

from bots.console.person import named
from bots.console.text import escape
from core.types.events import (
    AgentCreated,
    AgentFinished,
    ApprovalAsked,
    ApprovalDecided,
    BudgetReached,
    ChatPosted,
    ErrorRaised,
    FormAsked,
    FormClosed,
    LLMCalled,
    MessageSent,
    Notified,
    QuestionAsked,
    QuestionClosed,
    RunEvent,
    RunFinished,
    RunStarted,
    RunStatusChanged,
    SpendApprovalAsked,
    SpendApprovalDecided,
    SpendWarned,
    ToolCalled,
    ToolProgress,
    TurnStarted,
)
from core.types.figures import cost, number, tokens


class Trace:
    """Lines for one run's events (agents named as they join); ``tools_called`` counts
    the tool calls seen."""

    def __init__(self, *, verbose: bool = False) -> None:
        self.verbose = verbose
        self.names: dict[str, str] = {}
        self.tools_called = 0

    def _who(self, agent_id: str | None) -> str:
        return escape(self.names.get(agent_id or "", agent_id or "run"))

    def lines(self, event: RunEvent) -> list[str]:
        """What ``event`` adds to the trace (nothing for what the thread shows)."""
        match event:
            case RunStarted():
                return [f"[bold]▶ run {escape(event.run_id)}[/] — {escape(event.task)}"]
            case AgentCreated():
                self.names[event.agent_id or ""] = event.name
                tools = escape(", ".join(event.tools)) or "none"
                return [
                    f"  [cyan]+ {escape(event.name)}[/] ({escape(event.role)}, "
                    f"{escape(event.model)}) tools: {tools}"
                ]
            case TurnStarted():
                turn = f"  [dim]{self._who(event.agent_id)} turn {event.seq}[/]"
                return [turn] if self.verbose else []
            case LLMCalled():
                return self._said(event)
            case ToolCalled():
                return [self._tool(event)]
            case ToolProgress():  # at most about once a second per call
                done = f"{event.progress:g}" + (f"/{event.total:g}" if event.total else "")
                about = escape(f"{event.tool} {done} {event.message}".strip())
                return [f"  [dim]… {self._who(event.agent_id)}: {about}[/]"] if self.verbose else []
            case MessageSent():
                to = escape(self.names.get(event.recipient, event.recipient))
                return [f"  ✉ {self._who(event.agent_id)} → {to}: {escape(event.preview)}"]
            case AgentFinished():
                return [self._end(event)]
            case ErrorRaised():  # the thread says the error; its hint goes under it
                return [f"    [dim]→ {escape(event.hint)}[/]"] if event.hint else []
            case QuestionClosed():
                by = f"answered by {escape(named(event.by) if event.by else '?')}"
                return [f"  [yellow]✓ question {'no answer in time' if event.timed_out else by}[/]"]
            case FormClosed():
                by = escape(named(event.by) if event.by else "?")
                said = "no answer in time" if event.timed_out else f"{event.action} by {by}"
                return [f"  [yellow]✓ form {said}[/]"]
            case RunStatusChanged():
                said = f"  [dim]run is {event.status.value} ({escape(named(event.by))})[/]"
                return [said] if self.verbose else []
            case ApprovalDecided():
                return [f"  [yellow]✓ {escape(event.tool)}: {escape(event.decision.said())}[/]"]
            case QuestionAsked() | FormAsked() | ChatPosted() | Notified() | ApprovalAsked():
                return []  # in the thread
            case BudgetReached() | RunFinished():
                return []  # in the thread
            case SpendApprovalAsked() | SpendApprovalDecided() | SpendWarned():
                return []  # in the thread (bots.console.spend)
            case _:
                assert_never(event)

    def _said(self, event: LLMCalled) -> list[str]:
        lines = []
        if event.text:
            lines.append(f"  [magenta]{self._who(event.agent_id)}:[/] {escape(event.text)}")
        if self.verbose:
            used = f"{number(event.prompt_tokens)}+{tokens(event.completion_tokens)}"
            lines.append(f"  [dim]{used}, {cost(event.cost_usd)}[/]")
        return lines

    def _end(self, event: AgentFinished) -> str:
        style = "green" if event.reason.value == "finished" else "red"
        detail = f" {escape(event.detail)}" if event.detail else ""
        spent = f"{tokens(event.tokens)}, {cost(event.cost_usd)}"
        ended = f"{self._who(event.agent_id)} {event.reason.value}"
        return f"  [{style}]■ {ended}[/]{detail} [dim]({spent})[/]"

    def _tool(self, event: ToolCalled) -> str:
        self.tools_called += 1
        mark = "[green]✓[/]" if event.ok else "[red]✗[/]"
        first = event.result.splitlines()[0] if event.result else ""
        return (
            f"  {mark} [dim]{self._who(event.agent_id)}[/] [yellow]{escape(event.tool)}[/]"
            f"({escape(event.arguments)}) → {escape(first)}"
        )
