"""The calls in flight on one MCP session, so that what a server sends during a call
reaches that call: progress notifications (its time limit starts again, the run's status
line shows them) and elicitation requests (a form for the run's people).

The SDK runs its callbacks in the session's own task, where the calling turn's context
variables are not set, and an ``elicitation/create`` sent over stdio names no request. So
a request is matched to its call by, in order: the context variable (set when the SDK
resolves a 2026 input-required result in the caller's task), the task id the request is
related to (a task-augmented call), and else the oldest call in flight on the session
that has a turn behind it (exact whenever one call is in flight, which is the usual case).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import mcp_types as types

from core.config_tools import McpSettings
from core.tools.elicit import ElicitRequest, elicit
from core.types.events import ToolProgress

if TYPE_CHECKING:
    from core.agent.context import ToolContext

log = logging.getLogger(__name__)

_RELATED_TASK = "io.modelcontextprotocol/related-task"
_SHOW_EVERY_S = 1.0  # progress shown in the run's status at most this often per call


@dataclass
class Call:
    """One tool call waiting for its answer."""

    tool: str  # the tool's name on the server
    shown_as: str  # its name in the registry (``<server>__<tool>``)
    ctx: ToolContext | None  # the turn making it (None: a listing, doctor)
    idle_s: float
    cap_at: float  # loop time past which no progress extends it
    timer: asyncio.Timeout | None = None
    task_id: str | None = None
    progressed: bool = False  # a notification came (the limit was started again)
    capped: bool = False  # the cap, not the idle limit, is the deadline now
    shown_at: float = field(default=0.0)

    def touch(self) -> None:
        """Start the idle limit again, never past the cap."""
        if self.timer is None or self.timer.expired():
            return
        now = asyncio.get_running_loop().time()
        self.capped = now + self.idle_s >= self.cap_at
        self.timer.reschedule(min(now + self.idle_s, self.cap_at))

    def too_long(self, server: str, s: McpSettings) -> str:
        """Why the call was given up, in words the model reads."""
        if self.capped:
            return (
                f"MCP server {server!r} was still at work on {self.tool} after "
                f"{s.call_cap_s:g} s, the most any call may take (mcp.call_cap_s). Try "
                "smaller work, or go on without it."
            )
        quiet = "went quiet on" if self.progressed else "did not answer"
        return (
            f"MCP server {server!r} {quiet} {self.tool} within {s.call_timeout_s:g} s "
            "(mcp.call_timeout_s). It may be stuck or the work too big: try smaller work "
            "later, or go on without it."
        )

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No limit while a person answers a form (its own time-out bounds it); the time
        they took does not count against the cap."""
        loop = asyncio.get_running_loop()
        began = loop.time()
        if self.timer is not None and not self.timer.expired():
            self.timer.reschedule(None)
        try:
            yield
        finally:
            self.cap_at += loop.time() - began
            self.touch()


_current: ContextVar[Call | None] = ContextVar("mcp_call", default=None)


class InFlight:
    """The calls in flight on one server's session, and the SDK callbacks that use them."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.calls: list[Call] = []

    @contextlib.contextmanager
    def track(self, call: Call) -> Iterator[Call]:
        self.calls.append(call)
        token = _current.set(call)
        try:
            yield call
        finally:
            _current.reset(token)
            self.calls.remove(call)

    def find(self, meta: dict[str, Any] | None) -> Call | None:
        """The call a server's request belongs to (see the module's docstring)."""
        mine = _current.get()
        if mine is not None and mine in self.calls:
            return mine
        related = (meta or {}).get(_RELATED_TASK)
        task_id = related.get("taskId") if isinstance(related, dict) else None
        if task_id:
            for call in self.calls:
                if call.task_id == task_id:
                    return call
        return next((c for c in self.calls if c.ctx is not None), None)

    async def elicitation(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """The SDK's elicitation callback: ask the people of the run whose call this is."""
        call = self.find(getattr(context, "meta", None))
        if call is None or call.ctx is None:
            log.info("MCP server %r asked for input outside a run's call: declined", self.server)
            return types.ErrorData(
                code=types.INVALID_REQUEST, message="no person can answer outside a tool call"
            )
        if isinstance(params, types.ElicitRequestURLParams):
            request = ElicitRequest(
                server=self.server,
                message=params.message,
                schema=None,
                url=params.url,
                elicitation_id=params.elicitation_id,
            )
        else:
            request = ElicitRequest(
                server=self.server,
                message=params.message,
                schema=dict(params.requested_schema),
                url=None,
            )
        with call.paused():
            answer = await elicit(call.ctx, request)
        content = answer.content if answer.action == "accept" else None
        return types.ElicitResult(action=answer.action, content=content)

    async def progressed(
        self, call: Call, progress: float, total: float | None, message: str | None
    ) -> None:
        """A progress notification for ``call``: its limit starts again; shown at most
        about once a second in the run's status line."""
        call.progressed = True
        call.touch()
        now = time.monotonic()
        if call.ctx is None or now - call.shown_at < _SHOW_EVERY_S:
            return
        call.shown_at = now
        event = ToolProgress(
            run_id=call.ctx.run_id,
            agent_id=call.ctx.agent_id,
            tool=call.shown_as,
            progress=progress,
            total=total,
            message=(message or "")[:200],
        )
        try:
            await call.ctx.store.emit(event)
        except Exception:  # the status line is a nicety: the call goes on
            log.debug("progress of %s not shown", call.tool, exc_info=True)
