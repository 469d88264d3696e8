"""The one entry point for scheduled work: a job is an agent's turn or a request's
planning (both carried by the scheduler with the same delivery guarantees)."""

from __future__ import annotations

from core.agent.turn import run_turn
from core.runs.requests import plan_request
from core.scheduler.base import TurnJob, TurnOutcome
from core.services import Services


async def handle(svc: Services, job: TurnJob) -> TurnOutcome:
    """Run ``job``: plan the request, or run the agent's turn. Safe to call twice."""
    if job.kind == "plan":
        return await plan_request(svc, job.run_id)
    return await run_turn(svc, job)
