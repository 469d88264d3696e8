"""A scheduler for tests that drive turns by hand: it records, it never runs."""

from __future__ import annotations

from core.scheduler.base import TurnJob


class RecordingScheduler:
    """Records every submitted :class:`TurnJob` and runs nothing.

    A test builds its Services with this scheduler, then runs the jobs it wants with
    ``core.process.jobs.handle`` (or ``core.agent.turn.run_turn``) in the order it wants.
    ``jobs`` is the list of submissions, oldest first; the test may clear it or pop from
    it.
    """

    def __init__(self) -> None:
        self.jobs: list[TurnJob] = []

    async def submit(self, job: TurnJob) -> None:
        self.jobs.append(job)

    def of(self, agent_id: str) -> list[TurnJob]:
        """The jobs submitted for ``agent_id``, oldest first."""
        return [j for j in self.jobs if j.agent_id == agent_id]

    def pop(self) -> TurnJob:
        """Remove and return the latest submission (IndexError if there is none)."""
        return self.jobs.pop()
