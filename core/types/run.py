"""The run lifecycle as a small state machine."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

from core.types._base import Frozen, now
from core.types.agent import AgentSpec
from core.types.chat import Usage
from core.types.cohort import Cohort
from core.types.files import AttachedFile
from core.types.place import Place

# Who a step is recorded as when no person took it (an expiry, a pause at a limit).
SYSTEM = "caramba"


class RunStatus(StrEnum):
    # A chat request being routed and planned by a worker (core.runs.requests).
    PLANNING = "planning"
    PROPOSED = "proposed"
    APPROVED = "approved"
    RUNNING = "running"
    WAITING_HUMAN = "waiting_human"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    REJECTED = "rejected"

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL

    @property
    def words(self) -> str:
        """The status in plain words, after "this run …": "has already finished"."""
        return _WORDS[self]


_WORDS = {
    RunStatus.PLANNING: "is still being planned",
    RunStatus.PROPOSED: "is waiting for approval",
    RunStatus.APPROVED: "is about to start",
    RunStatus.RUNNING: "is running",
    RunStatus.WAITING_HUMAN: "is waiting for a person's answer",
    RunStatus.COMPLETED: "has already finished",
    RunStatus.FAILED: "has failed",
    RunStatus.CANCELLED: "was cancelled",
    RunStatus.REJECTED: "was rejected",
}

_TERMINAL = frozenset(
    {RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.REJECTED}
)

# (planning →) proposed → approved → running ⇄ waiting_human → completed | failed |
# cancelled | rejected
ALLOWED: dict[RunStatus, frozenset[RunStatus]] = {
    RunStatus.PLANNING: frozenset({RunStatus.PROPOSED, RunStatus.FAILED, RunStatus.CANCELLED}),
    RunStatus.PROPOSED: frozenset({RunStatus.APPROVED, RunStatus.REJECTED, RunStatus.CANCELLED}),
    RunStatus.APPROVED: frozenset({RunStatus.RUNNING, RunStatus.CANCELLED, RunStatus.FAILED}),
    RunStatus.RUNNING: frozenset(
        {RunStatus.WAITING_HUMAN, RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED}
    ),
    RunStatus.WAITING_HUMAN: frozenset(
        {RunStatus.RUNNING, RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED}
    ),
    RunStatus.COMPLETED: frozenset(),
    RunStatus.FAILED: frozenset(),
    RunStatus.CANCELLED: frozenset(),
    RunStatus.REJECTED: frozenset(),
}


class Transition(Frozen):
    """Who moved a run from one status to another, and when."""

    from_status: RunStatus | None
    to_status: RunStatus
    by: str
    at: float = Field(default_factory=now)
    note: str = ""


class RunBudget(Frozen):
    """A run's hard limits; an extension (by a person) raises them."""

    tokens: int = Field(ge=1)
    cost_usd: float = Field(ge=0)
    wall_clock_s: float = Field(gt=0)


class RunHead(Frozen):
    """What a turn reads of its run every time: small and cheap to parse (no cohort, no
    prompts, no history). Kept beside the run record, written with it."""

    id: str
    status: RunStatus
    paused: str | None = None
    budget: RunBudget | None = None
    deadline_at: float | None = None
    # The run's trace context (W3C traceparent) when tracing is on (core.telemetry).
    traceparent: str | None = None
    # The top agent's id: its turns' starts read the run's record too, for the save that
    # ends the run (``core.state.turn_start``, ``core.state.turn_cas``).
    root_agent_id: str | None = None
    # New with every write of the run's record (``core.state.records.set_run``): the head
    # as read stands for the record as read (``core.state.run_guard``).
    rev: str = ""


class RunState(BaseModel):
    id: str
    task: str
    status: RunStatus = RunStatus.PROPOSED
    requested_by: str = "console"
    # Files attached to the request, already in the run's workspace (under inputs/).
    files: list[AttachedFile] = Field(default_factory=list)
    root_agent_id: str | None = None
    # The top agent, kept from the proposal until the run is approved and started.
    root: AgentSpec | None = None
    # The whole proposed cohort (the root's tree), when a planner designed one.
    cohort: Cohort | None = None
    # A proposal not decided by then can no longer be approved.
    expires_at: float | None = None
    budget: RunBudget | None = None
    # What routing and planning the request cost (spent before anyone approved).
    planning: Usage | None = None
    # Set while the run is paused at its budget or deadline ("tokens", "cost",
    # "wall_clock"); agents park until a person extends or stops it.
    paused: str | None = None
    result: str | None = None
    error: str | None = None
    history: list[Transition] = Field(default_factory=list)
    created_at: float = Field(default_factory=now)
    started_at: float | None = None
    deadline_at: float | None = None
    # The run's span in its trace (W3C traceparent), set when it is recorded with tracing
    # on: every worker continues the run's trace from it (core.telemetry).
    traceparent: str | None = None
    # Where it was asked (platform, workspace, channel): the spend ledger attributes the
    # run's cost there (core.spend); None for a run recorded without one.
    place: Place | None = None

    def head(self, rev: str = "") -> RunHead:
        return RunHead(
            id=self.id,
            status=self.status,
            paused=self.paused,
            budget=self.budget,
            deadline_at=self.deadline_at,
            traceparent=self.traceparent,
            root_agent_id=self.root_agent_id,
            rev=rev,
        )
