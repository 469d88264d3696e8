"""What became of a person's action (``core.runs.people``): typed outcomes an adapter
renders and never re-decides. Each carries the text to show; a line that names the
person who acted is a :class:`Said`, so an adapter can show the name in its own markup
(a Slack mention, Discord bold) around words that stay core's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.runs.edits import EditProblem
from core.types.agent import AgentSpec
from core.types.approvals import ApprovalDecision, ApprovalRequest
from core.types.forms import FormField, Problem
from core.types.run import RunState


@dataclass(frozen=True)
class Said:
    """A line naming who acted: ``before`` + their name + ``after``."""

    before: str
    name: str
    after: str = ""

    @property
    def line(self) -> str:
        """The line in plain words."""
        return f"{self.before}{self.name}{self.after}"

    def render(self, escape: Callable[[str], str], name: str) -> str:
        """The line with core's words escaped and the name as the platform shows it
        (``name`` already in its markup)."""
        return f"{escape(self.before)}{name}{escape(self.after)}"


@dataclass(frozen=True)
class Done:
    """The action was taken on ``run`` (as it is now); ``said``: who did what."""

    run: RunState
    said: Said

    @property
    def line(self) -> str:
        return self.said.line


@dataclass(frozen=True)
class Refused:
    """Not taken; ``reason``: what to tell only the person (names, never ids);
    ``problems``: an edit's, each with its agent and field."""

    reason: str
    run: RunState | None = None
    problems: tuple[EditProblem, ...] = ()


@dataclass(frozen=True)
class Requested:
    """The request is recorded as run ``run_id`` (a worker plans it)."""

    run_id: str


@dataclass(frozen=True)
class NotTaken:
    """The request could not be recorded; ``reason``: what to say in the thread."""

    reason: str


@dataclass(frozen=True)
class Delivered:
    """A reply reached the run: an agent's open question answered, or a follow-up."""

    run: RunState
    answered: bool


@dataclass(frozen=True)
class NotDelivered:
    """A reply reached nobody. ``hint``: why, and what to do; ``first``: the first time
    for this person and run (people also talk among themselves in a run's thread, so
    adapters show the hint only then)."""

    run: RunState
    hint: str
    first: bool


@dataclass(frozen=True)
class Rated:
    """The person's vote counts for the run's cohort and agents."""

    line: str = "Thanks for rating this run: it helps pick the teams for the next tasks."


@dataclass(frozen=True)
class AlreadyRated:
    """The person voted on this run before (a double click or a change of mind)."""

    line: str = "You already rated this run."


@dataclass(frozen=True)
class NotRated:
    """The vote could not be recorded (the person may try again)."""

    line: str = "Sorry, your rating could not be recorded; please try again."


@dataclass(frozen=True)
class Editable:
    """The person may edit the proposal ``run``: its ``agents``, in order."""

    run: RunState
    agents: tuple[AgentSpec, ...]


Rating = Rated | AlreadyRated | NotRated


@dataclass(frozen=True)
class ToFill:
    """A form an MCP server asks for, which the person may answer (what a Fill in button
    opens): ``fields`` to render, or ``url`` to open (URL mode)."""

    form_id: str
    server: str
    message: str
    fields: tuple[FormField, ...]
    url: str | None = None


@dataclass(frozen=True)
class FormInvalid:
    """Nothing was sent: what was typed does not fit the form (``problems``: each with
    its field and plain words naming it); show them and let the person correct it."""

    problems: tuple[Problem, ...]

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(p.text for p in self.problems)


@dataclass(frozen=True)
class ActionDecided:
    """A person decided about a tool call waiting for approval (``request``): ``said``
    names them (``Denied by Alice: not that folder.``); the agent is woken to go on."""

    run: RunState
    request: ApprovalRequest
    decision: ApprovalDecision
    said: Said

    @property
    def line(self) -> str:
        return self.said.line
