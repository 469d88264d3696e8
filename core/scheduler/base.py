"""The scheduler interface: something that runs agent turns, somewhere, eventually."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Literal, Protocol

from core.types._base import Frozen


class TurnJob(Frozen):
    """Run turn ``seq`` of one agent — or, with ``kind="plan"``, the planning of a chat
    request (``core.runs.requests``; no agent yet). Serialisable: Celery carries it as JSON,
    so planning gets the turns' delivery guarantees (ledger, retries, redelivery)."""

    run_id: str
    agent_id: str = ""
    seq: int = 0
    kind: Literal["turn", "plan"] = "turn"


class TurnOutcome(StrEnum):
    """What a job came to."""

    CONTINUED = "continued"  # saved; the next turn is scheduled
    WAITING = "waiting"  # saved; the agent sleeps until a message arrives
    ENDED = "ended"  # saved; the agent finished or hit a cap
    DROPPED = "dropped"  # a duplicate, stale or spurious delivery; nothing applied
    PARKED = "parked"  # the run is paused at a limit; the turn runs after an extension


TurnHandler = Callable[[TurnJob], Awaitable[object]]


class TurnsHere(Protocol):
    """The turns this process runs, as its background loop sees them (the in-process
    scheduler, a Celery worker's runtime): the loop holds back work that can wait while
    any runs (``core.process.background.Deferral``)."""

    def running(self) -> bool:
        """Whether a turn is running or waiting to run here."""
        ...

    def watch_idle(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` (on this process's event loop) each time the last turn here
        ended; returns what stops it."""
        ...


class IdleWatchers:
    """The callbacks of :meth:`TurnsHere.watch_idle`, for a scheduler to keep and call."""

    def __init__(self) -> None:
        self._callbacks: list[Callable[[], None]] = []

    def watch(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Keep ``callback``; returns what drops it."""
        self._callbacks.append(callback)
        return lambda: self._callbacks.remove(callback)

    def call(self, call: Callable[[Callable[[], None]], object] = lambda f: f()) -> None:
        """Call each (through ``call``: another thread hands them to the loop's)."""
        for callback in tuple(self._callbacks):
            call(callback)


class Scheduler(Protocol):
    """Queues turns. Implementations must tolerate the same job submitted twice:
    the turn function drops a job whose ``seq`` was already applied."""

    async def submit(self, job: TurnJob) -> None: ...
