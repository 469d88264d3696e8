"""The turn under way: what its phases share (the job, the agent's state and inbox, the
limits it checks, the events and usage it will save). Each phase reads it and adds its
part; the commit phase saves it.

Owns the shared record only (no I/O); may import ``core.agent`` modules below the phases."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.agent.lease import Held
from core.agent.limits import AgentLimits
from core.agent.responses import SavedResponse
from core.agent.turn_io import TurnIO
from core.llm.base import LLMRequest, LLMResponse
from core.llm.capabilities import Rung
from core.scheduler.base import TurnJob
from core.services import Services
from core.types.agent import AgentState, EndReason
from core.types.chat import Usage
from core.types.events import RunEvent
from core.types.run import RunHead


@dataclass
class Turn:
    """One delivery of turn ``job.seq`` that is the agent's to run."""

    svc: Services
    job: TurnJob
    io: TurnIO
    caps: AgentLimits
    run: RunHead
    # The run's usage before this turn.
    run_usage: Usage
    # The model's answer an earlier delivery of this turn saved, if any.
    saved: SavedResponse | None
    # This delivery's lease (released by the save) and what the start read with it.
    held: Held | None = None
    # Why this delivery must not run the turn (``core.agent.quarantine``), or None.
    quarantined: str | None = None
    # What the save records: the turn's events and the usage of its model call.
    events: list[RunEvent] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)

    @property
    def state(self) -> AgentState:
        return self.io.state

    @property
    def expected(self) -> int:
        """The seq this turn was read at: the save is a compare-and-set on it."""
        return self.io.seq


@dataclass(frozen=True)
class Ready:
    """Prepared: the request for the model, and what reading its answer needs."""

    request: LLMRequest
    # The tools this agent may call (its spec's that are registered).
    allowed: list[str]
    rung: Rung
    # The prompt's size in characters (for the next turn's token estimate).
    chars: int


@dataclass(frozen=True)
class Called:
    """The model answered (its text-written calls read out of it)."""

    response: LLMResponse


@dataclass(frozen=True)
class Ran:
    """The tools ran: whether the agent repeated itself, and how a reply without a call
    ends it (None: it does not)."""

    stalled: bool
    text_end: tuple[EndReason, str] | None
