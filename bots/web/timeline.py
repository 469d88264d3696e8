"""The run's timeline: one row per event worth showing (messages between agents, agents
created and ended, questions, pauses, errors)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from core.types.agent import EndReason
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
    ToolCalled,
    ToolProgress,
    TurnStarted,
)
from core.types.run import RunStatus

PREVIEW_CHARS = 240


def short(text: str | None, limit: int = PREVIEW_CHARS) -> str:
    if not text:
        return ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Line:
    """One row of the timeline."""

    id: str
    at: float
    kind: str
    who: str
    text: str
    # "private" | "team" | "broadcast" for messages; "ok" | "error" | "" otherwise.
    tag: str = ""
    target: str = ""
    detail: str = ""


def audience(recipient: str) -> str:
    if recipient.startswith("team:"):
        return "team"
    if recipient == "all" or recipient.startswith("all:"):
        return "broadcast"
    return "private"


def timeline_line(
    entry_id: str, event: RunEvent, names: dict[str, str], teams: dict[str, str]
) -> Line | None:
    """One timeline row for an event, or None for events the timeline leaves out (each
    model call and tool call is shown with its agent's turns instead)."""
    who = names.get(event.agent_id or "", event.agent_id or "")

    def line(
        text: str, *, tag: str = "", target: str = "", detail: str = "", by: str | None = None
    ) -> Line:
        return Line(entry_id, event.at, event.kind, by or who, text, tag, target, detail)

    match event:
        case MessageSent():
            tag = audience(event.recipient)
            if tag == "team":
                team = event.recipient.removeprefix("team:")
                target = f"team {teams.get(team, team)}"
            elif tag == "broadcast":
                target = "everyone"
            else:
                target = names.get(event.recipient, event.recipient)
            return line(event.preview, tag=tag, target=target)
        case RunStarted():
            return line("the run started")
        case AgentCreated():
            return line(f"created as {event.role} ({event.model})", by=event.name)
        case AgentFinished():
            tag = "ok" if event.reason is EndReason.FINISHED else "error"
            return line(
                f"ended: {event.reason.value}", tag=tag, detail=short(event.result or event.detail)
            )
        case RunFinished():
            tag = "ok" if event.status is RunStatus.COMPLETED else "error"
            return line(
                f"the run {event.status.value}", tag=tag, detail=short(event.result or event.error)
            )
        case ErrorRaised():
            return line(event.message, tag="error", detail=event.hint)
        case ChatPosted():
            return line(f"posted to the chat: {event.text}", detail=event.filename or "")
        case Notified():
            return line(f"notified {event.who}: {event.text}")
        case QuestionAsked():
            return line(f"asked: {event.question}", tag="question")
        case QuestionClosed():
            answerer = names.get(event.by or "", str(event.by))
            text = "the question timed out" if event.timed_out else f"{answerer} answered"
            return line(text, detail=event.answer or "", tag="question")
        case FormAsked():
            asked = "to open a link" if event.url else "to fill in a form"
            return line(f"{event.server} asked {asked}: {event.message}", tag="question")
        case FormClosed():
            answerer = names.get(event.by or "", str(event.by))
            text = "the form timed out" if event.timed_out else f"{answerer} chose {event.action}"
            return line(text, tag="question")
        case ApprovalAsked():
            r = event.request
            why = f"why: {r.reason}\n" if r.reason else ""
            text = f"asked to use {r.tool} (waits for a person's approval)"
            return line(text, tag="question", detail=f"{why}arguments: {short(r.arguments)}")
        case ApprovalDecided():
            # Who decided, when (the row's time) and what: every decision is shown.
            made = event.decision
            by = names.get(made.by, made.name) if made.by else "nobody"
            tag = "ok" if made.approved else "error"
            return line(f"{event.tool}: {made.said()}", by=by, tag=tag)
        case BudgetReached():
            return line(f"paused at its {event.what} budget", tag="error", detail=event.detail)
        case RunStatusChanged():
            # A status an agent caused (waiting for a person) names the agent.
            by = names.get(event.by, event.by)
            return line(f"the run is {event.status.value}", by=by, detail=event.note)
        case TurnStarted() | LLMCalled() | ToolCalled() | ToolProgress():
            return None
        case _:
            assert_never(event)
