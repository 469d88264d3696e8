"""Planning failures: the model could not produce a valid decision or design."""

from __future__ import annotations

from collections.abc import Sequence

from core.errors import RunError


class PlanningError(RunError):
    """A planning stage gave up after ``attempts`` replies; ``errors`` are the last problems.

    ``model``: the model asked; ``answered_json``: whether any reply held JSON at all (False:
    the model answers in prose only); ``replies``: the text of each reply, reasoning dropped.
    """

    def __init__(
        self,
        stage: str,
        attempts: int,
        errors: list[str],
        *,
        model: str = "",
        answered_json: bool = True,
        replies: Sequence[str] = (),
    ) -> None:
        self.stage = stage
        self.attempts = attempts
        self.errors = list(errors)
        self.model = model
        self.answered_json = answered_json
        self.replies = list(replies)
        listed = "; ".join(errors) or "no reply"
        super().__init__(f"{stage} failed after {attempts} attempt(s); last errors: {listed}")
