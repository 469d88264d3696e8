"""Small helpers shared by tests."""

from __future__ import annotations

from core.runs import follow_events
from core.runtime import Services
from core.types.events import RunEvent


async def collect(svc: Services, run_id: str, timeout_s: float = 10) -> list[RunEvent]:
    """Every event of a run, up to and including run_finished."""
    return [e async for e in follow_events(svc, run_id, timeout_s=timeout_s)]


def kinds(events: list[RunEvent]) -> list[str]:
    return [e.kind for e in events]
