"""The turn's tools phase: calls the model asked for together run concurrently when every
one of them is read-only, one after another otherwise; results and events keep the
model's order either way. No timing: overlap is shown by a handshake between the tools."""

from __future__ import annotations

import asyncio
from typing import Any

import fakeredis

from core.llm.scripted import Reply, ScriptedModel, call
from core.runs.control import start_run
from core.tools.registry import tool
from core.types import AgentSpec
from core.types.events import ToolCalled
from tests.conftest import make_settings
from tests.helpers import collect

# How long a tool waits for the other before giving up (a failure, not a measurement).
_PATIENCE_S = 5


class Handshake:
    """Two tools that each finish only once the other has started: both succeed only if
    they overlap; the second one finishes first."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.first_started, self.second_started = asyncio.Event(), asyncio.Event()
        self.second_done = asyncio.Event()

    def tools(self, *, read_only: bool) -> tuple[Any, Any]:
        hs = self

        @tool(read_only=read_only)
        async def look_first() -> str:
            """Look at the first thing."""
            hs.log.append("first started")
            hs.first_started.set()
            await asyncio.wait_for(hs.second_started.wait(), _PATIENCE_S)
            await asyncio.wait_for(hs.second_done.wait(), _PATIENCE_S)
            hs.log.append("first done")
            return "first"

        @tool(read_only=read_only)
        async def look_second() -> str:
            """Look at the second thing."""
            hs.log.append("second started")
            hs.second_started.set()
            await asyncio.wait_for(hs.first_started.wait(), _PATIENCE_S)
            hs.log.append("second done")
            hs.second_done.set()
            return "second"

        return look_first, look_second


class InOrder:
    """Two tools that record when they start and end."""

    def __init__(self) -> None:
        self.log: list[str] = []

    def tools(self, *, first_read_only: bool) -> tuple[Any, Any]:
        log = self.log

        @tool(read_only=first_read_only)
        async def look_first() -> str:
            """Look at the first thing."""
            log.append("first started")
            await asyncio.sleep(0)
            log.append("first done")
            return "first"

        @tool(read_only=False)
        async def look_second() -> str:
            """Change the second thing."""
            log.append("second started")
            await asyncio.sleep(0)
            log.append("second done")
            return "second"

        return look_first, look_second


async def _run_both(make_services: Any, first: Any, second: Any) -> list[ToolCalled]:
    model = ScriptedModel().script(
        "*",
        Reply(calls=(call("look_first", {}), call("look_second", {}))),
        Reply(calls=(call("finish", {"result": "done"}),)),
    )
    client = fakeredis.FakeAsyncRedis(decode_responses=True)
    try:
        svc = make_services(make_settings(), model, redis=client)
        svc.tools.register(first)
        svc.tools.register(second)
        spec = AgentSpec(name="Solo", tools=("look_first", "look_second", "finish"))
        run_id = await start_run(svc, "look at both", spec)
        events = await collect(svc, run_id)
        state = await svc.store.load_agent(run_id, spec.id)
    finally:
        await client.aclose()
    assert state is not None
    # The thread keeps the model's order: each result after its call, first then second.
    results = [m.content for m in state.thread if m.role == "tool"]
    assert results[:2] == ["first", "second"]
    return [e for e in events if isinstance(e, ToolCalled)]


async def test_read_only_calls_asked_together_overlap(make_services: Any) -> None:
    hs = Handshake()
    called = await _run_both(make_services, *hs.tools(read_only=True))
    # The second started before the first ended, and ended first: they overlapped.
    assert hs.log == ["first started", "second started", "second done", "first done"]
    assert [(e.tool, e.ok, e.result) for e in called] == [
        ("look_first", True, "first"),
        ("look_second", True, "second"),
        ("finish", True, "Result recorded. You are done."),
    ]


async def test_calls_that_change_things_run_one_after_another(make_services: Any) -> None:
    for first_read_only in (True, False):
        order = InOrder()
        called = await _run_both(make_services, *order.tools(first_read_only=first_read_only))
        assert order.log == ["first started", "first done", "second started", "second done"]
        assert [e.tool for e in called] == ["look_first", "look_second", "finish"]
