"""What a turn comes to: the typed next step that ends every turn, in place of a ladder
of returns. A phase of the turn (``core.agent.phases``) returns its own result, or one of
these when the turn ends early; the commit phase applies the step and says what the turn
came to for the scheduler (:class:`~core.scheduler.base.TurnOutcome`).

Owns the step types only (no I/O); may import ``core.types``."""

from __future__ import annotations

from dataclasses import dataclass

from core.types.agent import EndReason


@dataclass(frozen=True)
class RunAgain:
    """Saved; the agent goes on: its next turn is scheduled."""


@dataclass(frozen=True)
class Wait:
    """Saved; the agent sleeps until a message arrives or, with ``question``, a person
    answers it (or its time-out passes)."""

    question: str | None = None


@dataclass(frozen=True)
class Finish:
    """Saved as the agent's end: it finished, or was stopped by a cap, an error, the run's
    cancellation or a quarantine (``detail`` says how, for people)."""

    reason: EndReason
    detail: str = ""


@dataclass(frozen=True)
class Pause:
    """Not saved: the run is paused at a limit and the agent's turn is parked until a
    person extends the run (or stops it)."""


@dataclass(frozen=True)
class Drop:
    """Not saved: this delivery is not the turn's to run (unknown agent, stale, duplicate,
    spurious wake-up, or a save another delivery made first)."""

    why: str


Step = RunAgain | Wait | Finish | Pause | Drop
