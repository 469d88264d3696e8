"""The direct client's connection pool: as many model calls at once as a process runs
turns (``llm.max_connections``), not aiohttp's default 100 — with that default, 1,000
agents in flight on two workers made 200 calls at a time and the rest waited for a
connection."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from aiohttp import web

from core.config import LLMSettings
from core.llm.base import LLMRequest
from core.llm.openai_compat import OpenAICompatClient
from core.types.chat import ChatMessage
from tests.fakes.llm_server import FakeLLMServer

pytestmark = pytest.mark.integration


class _GatedServer(FakeLLMServer):
    """Holds every chat request until ``want`` are in flight at once (or 5 s pass), and
    records the most it ever saw at once."""

    def __init__(self, want: int) -> None:
        super().__init__()
        self.want, self.now, self.peak = want, 0, 0
        self.gate = asyncio.Event()

    async def _handle_chat(self, request: web.Request) -> web.StreamResponse:
        self.now += 1
        self.peak = max(self.peak, self.now)
        if self.now >= self.want:
            self.gate.set()
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5):
                    await self.gate.wait()
            return await super()._handle_chat(request)
        finally:
            self.now -= 1


async def _peak(calls: int, **settings: Any) -> tuple[int, int]:
    async with _GatedServer(want=settings.get("max_connections", calls)) as server:
        client = OpenAICompatClient(LLMSettings(api_base=server.base_url, **settings))
        request = LLMRequest(
            model="openai/fake-model", messages=(ChatMessage(role="user", content="hi"),)
        )
        answers = await asyncio.gather(*(client.complete(request) for _ in range(calls)))
        await client.aclose()
        return server.peak, sum(a.content == "ok" for a in answers)


async def test_more_calls_at_once_than_aiohttps_default_pool() -> None:
    peak, answered = await _peak(150)
    assert answered == 150
    assert peak == 150  # all at once (aiohttp's default pool: 100, then a 5 s stall)


async def test_the_pool_is_bounded_by_max_connections() -> None:
    peak, answered = await _peak(30, max_connections=10)
    assert answered == 30
    assert peak == 10
