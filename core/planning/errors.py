"""Planning failures: the model could not produce a valid decision or design."""

from __future__ import annotations

from core.errors import RunError


class PlanningError(RunError):
    """A planning stage gave up after ``attempts`` replies; ``errors`` are the last problems."""

    def __init__(self, stage: str, attempts: int, errors: list[str]) -> None:
        self.stage = stage
        self.attempts = attempts
        self.errors = list(errors)
        listed = "; ".join(errors) or "no reply"
        super().__init__(f"{stage} failed after {attempts} attempt(s); last errors: {listed}")
