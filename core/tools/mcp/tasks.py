"""Task-augmented tool calls (MCP 2025-11-25 tasks): ``tools/call`` with a ``task`` asks
the server to work in the background; its task is polled (``tasks/get``), its result
fetched (``tasks/result``, which also carries any question the server asks meanwhile),
and cancelled (``tasks/cancel``) if the call is given up.

The SDK (mcp 2.3.0) keeps tasks as types only: its typed ``tools/call`` path reads every
answer as a ``CallToolResult``, so these requests go through the session's dispatcher
with the session's own request stamp. A status that changes counts as progress: it starts
the call's idle limit again and shows in the run's status line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from mcp import Client
from mcp_types import CallToolResult, CreateTaskResult, GetTaskResult, Task

from core.tools.mcp.inflight import Call, InFlight

log = logging.getLogger(__name__)

_DONE = ("completed", "failed", "cancelled")
_TTL_MS = 3_600_000  # how long the server should keep the task's result
_CANCEL_S = 5.0


def task_support(tool: Any) -> str:
    """``forbidden``, ``optional`` or ``required`` (absent: forbidden)."""
    execution = getattr(tool, "execution", None)
    return getattr(execution, "task_support", None) or "forbidden"


def server_runs_tasks(client: Client) -> bool:
    """Whether the server said it runs ``tools/call`` as tasks."""
    caps = client.server_capabilities.model_dump(by_alias=True, exclude_none=True)
    return "call" in (caps.get("tasks", {}).get("requests", {}).get("tools", {}) or {})


async def _request(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    session = client.session
    data: dict[str, Any] = {"method": method, "params": params}
    opts: dict[str, Any] = {}
    session._stamp(data, opts)  # type: ignore[arg-type]  # the negotiated version's stamp
    return await session._dispatcher.send_raw_request(method, data["params"], opts)  # type: ignore[arg-type]


async def call_as_task(
    client: Client,
    inflight: InFlight,
    call: Call,
    arguments: dict[str, Any],
    poll_s: float,
) -> CallToolResult:
    """Create the task, wait for it to end, return its result; cancel it if abandoned."""
    params = {"name": call.tool, "arguments": arguments, "task": {"ttl": _TTL_MS}}
    created = CreateTaskResult.model_validate(await _request(client, "tools/call", params))
    task: Task = created.task
    call.task_id = task.task_id
    state = [task]
    try:
        await _watch(client, inflight, call, state, poll_s, until_asked=True)
        # Blocks until the task ends; a question the server asks on the way arrives
        # through it (the elicitation callback, related to this task). Meanwhile its
        # status is still watched: a change keeps the call alive.
        watcher = asyncio.create_task(_watch(client, inflight, call, state, poll_s))
        try:
            raw = await _request(client, "tasks/result", {"taskId": task.task_id})
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
        state[0] = state[0].model_copy(update={"status": "completed"})
        return CallToolResult.model_validate(raw)
    finally:
        if state[0].status not in _DONE:
            await _cancel(client, task.task_id)


async def _watch(
    client: Client,
    inflight: InFlight,
    call: Call,
    state: list[Task],
    poll_s: float,
    *,
    until_asked: bool = False,
) -> None:
    """Poll the task (``state[0]``) until it ends (or asks for input, ``until_asked``);
    a status that changes is progress."""
    task = state[0]
    while task.status not in _DONE and not (until_asked and task.status == "input_required"):
        await asyncio.sleep(max(poll_s, (task.poll_interval or 0) / 1000))
        seen = (task.status, task.status_message)
        task = state[0] = GetTaskResult.model_validate(
            await _request(client, "tasks/get", {"taskId": task.task_id})
        )
        if (task.status, task.status_message) != seen:
            await inflight.progressed(call, 0, None, task.status_message or task.status)


async def _cancel(client: Client, task_id: str) -> None:
    """Ask the server to stop the task (best effort, bounded: the call is over anyway)."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(_CANCEL_S):
            await asyncio.shield(_request(client, "tasks/cancel", {"taskId": task_id}))
            log.info("MCP task %s cancelled", task_id)
