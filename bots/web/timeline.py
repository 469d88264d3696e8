"""The run's timeline: one row per event worth showing (messages between agents, every
tool call and model call with how long it took, agents created and ended, questions,
approvals, forms, pauses, errors). Each row names the agents it is about, for the page's
filter by agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from bots.web.pretty import arguments, pretty
from bots.web.shown import category
from core.types import figures
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
    SpendApprovalAsked,
    SpendApprovalDecided,
    SpendWarned,
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
    # The agents the row is about (who acted, who was addressed), for the filter.
    agents: tuple[str, ...] = ()
    # How long it took (tool and model calls), None when unknown or not a call.
    seconds: float | None = None
    # Labelled texts shown pretty-printed (a tool call's arguments and result).
    blocks: tuple[tuple[str, str], ...] = ()

    @property
    def category(self) -> str:
        return category(self.kind)


def audience(recipient: str) -> str:
    if recipient.startswith("team:"):
        return "team"
    if recipient == "all" or recipient.startswith("all:"):
        return "broadcast"
    return "private"


# The events of each kind of row, matched exhaustively by the functions below.
Work = ToolCalled | LLMCalled | MessageSent | ChatPosted | Notified | ErrorRaised
Lifecycle = RunStarted | AgentCreated | AgentFinished | RunFinished | RunStatusChanged
Asked = QuestionAsked | QuestionClosed | FormAsked | FormClosed | ApprovalAsked | ApprovalDecided
Spend = SpendApprovalAsked | SpendApprovalDecided | SpendWarned | BudgetReached


@dataclass(frozen=True)
class _Rows:
    """What every row of one event shares, and the names it is shown with."""

    entry_id: str
    event: RunEvent
    names: dict[str, str]
    teams: dict[str, str]

    @property
    def who(self) -> str:
        return self.names.get(self.event.agent_id or "", self.event.agent_id or "")

    def name(self, agent_id: str | None, default: str) -> str:
        return self.names.get(agent_id or "", default)

    def line(
        self, text: str, *, tag: str = "", target: str = "", detail: str = "", by: str | None = None
    ) -> Line:
        event = self.event
        about = (event.agent_id,) if event.agent_id else ()
        return Line(
            self.entry_id, event.at, event.kind, by or self.who, text, tag, target, detail, about
        )


def timeline_line(
    entry_id: str, event: RunEvent, names: dict[str, str], teams: dict[str, str]
) -> Line | None:
    """One timeline row for an event, or None for the events the timeline leaves out (a
    turn's start, shown in the waterfall; a tool's progress, shown while it runs)."""
    rows = _Rows(entry_id, event, names, teams)
    match event:
        case ToolCalled() | LLMCalled() | MessageSent() | ChatPosted() | Notified() | ErrorRaised():
            return _work(rows, event)
        case RunStarted() | AgentCreated() | AgentFinished() | RunFinished() | RunStatusChanged():
            return _lifecycle(rows, event)
        case (
            QuestionAsked()
            | QuestionClosed()
            | FormAsked()
            | FormClosed()
            | ApprovalAsked()
            | ApprovalDecided()
        ):
            return _asked(rows, event)
        case SpendApprovalAsked() | SpendApprovalDecided() | SpendWarned() | BudgetReached():
            return _spend(rows, event)
        case TurnStarted() | ToolProgress():
            return None
        case _:
            assert_never(event)


def _work(rows: _Rows, event: Work) -> Line:
    """An agent's calls, messages and posts, and the errors it met."""
    match event:
        case ToolCalled():
            row = rows.line(f"called {event.tool}", tag="ok" if event.ok else "error")
            row.seconds = event.duration_s
            row.blocks = (
                ("arguments", arguments(event.arguments)),
                ("result", pretty(event.result)),
            )
            return row
        case LLMCalled():
            used = figures.tokens(event.prompt_tokens + event.completion_tokens)
            row = rows.line(f"model call ({event.model}), {used}")
            row.seconds = event.duration_s
            row.blocks = (("said", event.text),) if event.text else ()
            return row
        case MessageSent():
            return _message(rows, event)
        case ChatPosted():
            return rows.line(f"posted to the chat: {event.text}", detail=event.filename or "")
        case Notified():
            return rows.line(f"notified {event.who}: {event.text}")
        case ErrorRaised():
            return rows.line(event.message, tag="error", detail=event.hint)
        case _:
            assert_never(event)


def _message(rows: _Rows, event: MessageSent) -> Line:
    """A message between agents: to one agent, a team, or everyone."""
    tag = audience(event.recipient)
    if tag == "team":
        team = event.recipient.removeprefix("team:")
        target = f"team {rows.teams.get(team, team)}"
    elif tag == "broadcast":
        target = "everyone"
    else:
        target = rows.name(event.recipient, event.recipient)
    row = rows.line(event.preview, tag=tag, target=target)
    if event.recipient in rows.names:
        row.agents = (*row.agents, event.recipient)
    return row


def _lifecycle(rows: _Rows, event: Lifecycle) -> Line:
    """The run and its agents starting, changing status and ending."""
    match event:
        case RunStarted():
            return rows.line("the run started")
        case AgentCreated():
            return rows.line(f"created as {event.role} ({event.model})", by=event.name)
        case AgentFinished():
            tag = "ok" if event.reason is EndReason.FINISHED else "error"
            detail = short(event.result or event.detail)
            return rows.line(f"ended: {event.reason.value}", tag=tag, detail=detail)
        case RunFinished():
            tag = "ok" if event.status is RunStatus.COMPLETED else "error"
            detail = short(event.result or event.error)
            return rows.line(f"the run {event.status.value}", tag=tag, detail=detail)
        case RunStatusChanged():
            # A status an agent caused (waiting for a person) names the agent.
            by = rows.name(event.by, event.by)
            return rows.line(f"the run is {event.status.value}", by=by, detail=event.note)
        case _:
            assert_never(event)


def _asked(rows: _Rows, event: Asked) -> Line:
    """What the run asked people (questions, forms, approvals) and what they answered."""
    match event:
        case QuestionAsked():
            return rows.line(f"asked: {event.question}", tag="question")
        case QuestionClosed():
            answerer = rows.name(event.by, str(event.by))
            text = "the question timed out" if event.timed_out else f"{answerer} answered"
            return rows.line(text, detail=event.answer or "", tag="question")
        case FormAsked():
            asked = "to open a link" if event.url else "to fill in a form"
            return rows.line(f"{event.server} asked {asked}: {event.message}", tag="question")
        case FormClosed():
            answerer = rows.name(event.by, str(event.by))
            text = "the form timed out" if event.timed_out else f"{answerer} chose {event.action}"
            return rows.line(text, tag="question")
        case ApprovalAsked():
            r = event.request
            why = f"why: {r.reason}\n" if r.reason else ""
            text = f"asked to use {r.tool} (waits for a person's approval)"
            return rows.line(text, tag="question", detail=f"{why}arguments: {short(r.arguments)}")
        case ApprovalDecided():
            # Who decided, when (the row's time) and what: every decision is shown.
            made = event.decision
            by = rows.name(made.by, made.name) if made.by else "nobody"
            tag = "ok" if made.approved else "error"
            return rows.line(f"{event.tool}: {made.said()}", by=by, tag=tag)
        case _:
            assert_never(event)


def _spend(rows: _Rows, event: Spend) -> Line:
    """Budgets reached, spend over a place's budget and what its owner decided."""
    match event:
        case BudgetReached():
            text = f"paused at its {event.what} budget"
            return rows.line(text, tag="error", detail=event.detail)
        case SpendApprovalAsked():
            owner = event.owner_name or "its owner"
            spent = f"{figures.cost(event.spent_usd)} of {figures.cost(event.month_usd)}"
            text = f"over the {event.scope} budget of {event.place_name} (waits for {owner})"
            return rows.line(text, tag="question", detail=f"{event.month}: {spent}")
        case SpendApprovalDecided():
            said = "approved" if event.approved else "denied"
            by = rows.name(event.by, event.by_name or event.by)
            tag = "ok" if event.approved else "error"
            return rows.line(f"spend over budget {said}", by=by, tag=tag)
        case SpendWarned():
            spent = f"{figures.cost(event.spent_usd)} of {figures.cost(event.month_usd)}"
            return rows.line(f"{event.place_name} has spent {spent} this month", tag="question")
        case _:
            assert_never(event)
