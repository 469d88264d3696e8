"""Small helpers shared by tests."""

from __future__ import annotations

import asyncio

from core.llm.base import LLM, LLMRequest, LLMResponse
from core.services import Services
from core.state.event_hub import follow_events
from core.types.events import RunEvent


async def collect(svc: Services, run_id: str, timeout_s: float = 10) -> list[RunEvent]:
    """Every event of a run, up to and including run_finished."""
    return [
        e
        async for e in follow_events(
            svc.store, run_id, blocking=not svc.settings.redis.embedded, timeout_s=timeout_s
        )
    ]


def kinds(events: list[RunEvent]) -> list[str]:
    return [e.kind for e in events]


class SlowModel:
    """Wraps a model so that concurrent deliveries of a turn all reach it before either
    saves: the save must arbitrate."""

    def __init__(self, inner: LLM, delay_s: float = 0.05) -> None:
        self.inner = inner
        self.delay_s = delay_s

    async def complete(self, request: LLMRequest) -> LLMResponse:
        await asyncio.sleep(self.delay_s)
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        return None
