"""A run's live events on the inspector's page (``/runs/<run>/events``): server-sent
events, each a timeline row rendered by the page's own ``_line.html`` macro, a comment
every ``KEEPALIVE_S`` while nothing happens, ``end`` after the run finished."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

from starlette.requests import Request

from bots.web.timeline import timeline_line
from core.state.store import Store
from core.types.events import RunEvent
from core.types.run import RunState

KEEPALIVE_S = 15.0


def after(request: Request) -> str:
    """The stream id the page has the events up to (``Last-Event-ID`` when the browser
    reconnects, else ``?after=``); ``0-0``, from the start, if it is not one."""
    said = request.headers.get("last-event-id") or request.query_params.get("after", "0-0")
    return said if _stream_id(said) else "0-0"


async def agent_names(store: Store, run_id: str) -> dict[str, str]:
    """The run's agents' names by id (the id where an agent has no spec)."""
    names = {a: a for a in await store.agent_ids(run_id)}
    for agent_id in names:
        found = await store.load_spec(run_id, agent_id)
        names[agent_id] = found[0].name if found else agent_id
    return names


def team_names(run: RunState) -> dict[str, str]:
    """The run's teams' names by id (the id where a team has no name)."""
    return {t.id: t.name or t.id for t in (run.cohort.teams if run.cohort else ())}


def messages(
    line: Callable[[Any], Any], names: dict[str, str], teams: dict[str, str]
) -> Callable[[str, RunEvent], str]:
    """An event as a server-sent event: its kind and its row's HTML (``line``: the
    template's macro), learning each agent's name as it is created."""

    def message(entry_id: str, event: RunEvent) -> str:
        if event.kind == "agent_created":
            names[event.agent_id or ""] = event.name
        row = timeline_line(entry_id, event, names, teams)
        data = {"kind": event.kind, "html": str(line(row)) if row else ""}
        return f"id: {entry_id}\nevent: run\ndata: {json.dumps(data)}\n\n"

    return message


def _stream_id(text: str) -> bool:
    a, dash, b = text.partition("-")
    return a.isdigit() and (not dash or b.isdigit())


async def sse(
    entries: AsyncGenerator[tuple[str, RunEvent], None], message: Callable[[str, RunEvent], str]
) -> AsyncIterator[str]:
    """Server-sent events from the run's events, a comment every ``KEEPALIVE_S`` while
    nothing happens (proxies close idle connections), ``end`` after the run finished."""
    queue: asyncio.Queue[tuple[str, RunEvent] | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            # aclosing: a page closed mid-run stops watching at once.
            async with contextlib.aclosing(entries):
                async for entry in entries:
                    await queue.put(entry)
        finally:
            await queue.put(None)

    task = asyncio.create_task(pump())
    try:
        yield "retry: 2000\n\n"
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), KEEPALIVE_S)
            except TimeoutError:
                yield ": keep-alive\n\n"
                continue
            if item is None:
                yield "event: end\ndata: {}\n\n"
                return
            yield message(*item)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
