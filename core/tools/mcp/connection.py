"""One MCP server's session for the whole process, reused across turns and runs.

The SDK's context managers (the transport, the session) run anyio task groups that must be
entered and exited by the same task, so a long-lived *owner* task holds them: it connects,
hands the client over, and waits until told to close or until the session breaks. Turns
call through the client from their own tasks (JSON-RPC requests are multiplexed). A call
that finds the connection broken drops the session, and the next call connects again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from mcp import Client, MCPError
from mcp_types import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    REQUEST_TIMEOUT,
    CallToolResult,
    ToolListChangedNotification,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from core.config_tools import McpServer, McpSettings
from core.tools.mcp.connect import McpServerError, leaf, open_client, said
from core.tools.mcp.inflight import Call, InFlight
from core.tools.mcp.stderr import ServerLog
from core.tools.mcp.tasks import call_as_task

if TYPE_CHECKING:
    from core.agent.context import ToolContext

log = logging.getLogger(__name__)

_CLOSE_S = 10.0  # how long the owner task may take to close the session


class McpConnection:
    """The session with the server configured as ``mcp.servers.<name>``."""

    def __init__(
        self,
        name: str,
        server: McpServer,
        settings: McpSettings,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.server = server
        self.settings = settings
        self._environ = environ
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()
        self.connects = 0  # sessions opened so far (1 + reconnections)
        self.inflight = InFlight(name)
        self._log: ServerLog | None = None
        # Called (in a task of its own) when the server says its tool list changed.
        self.on_tools_changed: Callable[[], Coroutine[Any, Any, None]] | None = None
        self._background: set[asyncio.Task[None]] = set()

    @property
    def connected(self) -> bool:
        return self._client is not None and self._owner is not None and not self._owner.done()

    async def client(self) -> Client:
        """The live session, connecting (again) first if there is none; ``McpServerError``
        with the reason if the server cannot be started or reached."""
        if self.connected:
            assert self._client is not None
            return self._client
        async with self._lock:
            if not self.connected:
                await self._drop()
                await self._connect()
            assert self._client is not None
            return self._client

    async def _connect(self) -> None:
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._owner = asyncio.create_task(self._own(ready, self._stop), name=f"mcp-{self.name}")
        try:
            async with asyncio.timeout(self.settings.connect_timeout_s):
                self._client = await asyncio.shield(ready)
        except TimeoutError:
            await self._drop(cancel=True)
            raise McpServerError(
                self.name,
                f"MCP server {self.name!r} did not start: no answer within "
                f"{self.settings.connect_timeout_s:g} s (mcp.connect_timeout_s)",
            ) from None
        except BaseException:
            await self._drop(cancel=True)
            raise
        self.connects += 1

    async def _own(self, ready: asyncio.Future[Client], stop: asyncio.Event) -> None:
        """Enter the SDK's context managers, hand the client over, wait, exit: one task."""
        if self.server.transport == "stdio" and self._log is None:
            self._log = ServerLog(self.name)
        try:
            async with open_client(
                self.name,
                self.server,
                self.settings,
                self._environ,
                errlog=self._log.file if self._log is not None else None,
                elicitation_callback=self.inflight.elicitation,
                message_handler=self._on_message,
            ) as client:
                ready.set_result(client)
                watcher = asyncio.create_task(self._watch(client), name=f"mcp-watch-{self.name}")
                try:
                    await stop.wait()
                finally:
                    watcher.cancel()
                    await asyncio.gather(watcher, return_exceptions=True)
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            elif not stop.is_set():
                # The transport failed (an HTTP server gone, a broken pipe): the next call
                # connects again.
                cause = leaf(exc)
                log.warning(
                    "MCP server %r: session ended (%s: %s); it reconnects on the next call",
                    self.name, type(cause).__name__, cause,
                )  # fmt: skip
        finally:
            if not ready.done():
                ready.cancel()

    async def _watch(self, client: Client) -> None:
        """On a 2026 connection, changes come on a ``subscriptions/listen`` stream (older
        servers send ``notifications/tools/list_changed``, see :meth:`_on_message`)."""
        tools = client.server_capabilities.tools
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or not (
            tools and tools.list_changed
        ):
            return
        try:
            async with client.listen(tools_list_changed=True) as events:
                async for _ in events:
                    await self._on_message(ToolListChangedNotification())
        except Exception as exc:  # the session ending ends the stream
            log.debug("MCP server %r: change stream ended (%s)", self.name, said(exc))

    async def _drop(self, cancel: bool = False) -> None:
        """Close the session (if any) in its owner task; the next call connects again.
        ``cancel``: the owner is still connecting (a handshake that hangs), stop it now."""
        owner, self._owner, self._client = self._owner, None, None
        if owner is None:
            return
        self._stop.set()
        if cancel:
            owner.cancel()
        _, pending = await asyncio.wait({owner}, timeout=_CLOSE_S)
        if pending:
            log.warning("MCP server %r did not close within %.0f s; cancelled", self.name, _CLOSE_S)
            owner.cancel()
            await asyncio.wait({owner}, timeout=_CLOSE_S)

    def stderr_tail(self) -> list[str]:
        """The last lines a stdio server wrote to its stderr (for ``caramba doctor``)."""
        return list(self._log.tail) if self._log is not None else []

    async def aclose(self) -> None:
        for task in list(self._background):
            task.cancel()
        async with self._lock:
            await self._drop()
        if self._log is not None:
            self._log.close()
            self._log = None

    async def _on_message(self, message: Any) -> None:
        """The SDK's message handler: a changed tool list is read again, in a task of its
        own (never in the session's receive path)."""
        if isinstance(message, ToolListChangedNotification) and self.on_tools_changed:
            task = asyncio.create_task(self.on_tools_changed(), name=f"mcp-relist-{self.name}")
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def discard(self, client: Client) -> None:
        """Drop the session ``client`` was part of, unless another call has already
        replaced it with a new one."""
        async with self._lock:
            if self._client is client or not self.connected:
                await self._drop()

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        repeatable: bool,
        ctx: ToolContext | None = None,
        shown_as: str = "",
        as_task: bool = False,
    ) -> CallToolResult:
        """Call ``tool`` for the turn of ``ctx`` (its people answer the server's questions;
        its run's status shows the progress), as a task if ``as_task``. A connection found
        closed is opened again, and the call repeated only if ``repeatable`` (a read-only
        tool): a change is never made twice unasked."""
        for attempt in (1, 2):
            client = await self.client()
            call = self._new_call(tool, ctx, shown_as or tool)
            try:
                with self.inflight.track(call):
                    return await self._timed(client, call, arguments, as_task)
            except TimeoutError:
                raise McpServerError(self.name, call.too_long(self.name, self.settings)) from None
            except MCPError as exc:
                if exc.code == REQUEST_TIMEOUT:
                    raise McpServerError(
                        self.name, f"MCP server {self.name!r} gave up on {tool}: {exc.message}"
                    ) from exc
                if exc.code != CONNECTION_CLOSED:  # the server refused the request
                    if exc.code in (INVALID_REQUEST, INTERNAL_ERROR):
                        # Maybe the session is gone (an HTTP server restarted, a proxy's
                        # error page): the next call starts a new one.
                        await self.discard(client)
                    raise McpServerError(
                        self.name,
                        f"MCP server {self.name!r} refused the call to {tool}: {exc.message}",
                    ) from exc
                lost: BaseException = exc
            except OSError as exc:  # the transport broke under the call (a broken pipe)
                lost = exc
            except Exception as exc:  # an answer that is not a valid result
                raise McpServerError(
                    self.name,
                    f"MCP server {self.name!r} answered {tool} with something that cannot be "
                    f"used ({said(exc)}). Try other arguments, or go on another way.",
                ) from exc
            await self.discard(client)
            if not (repeatable and attempt == 1):
                raise McpServerError(self.name, await self._lost(tool, repeatable, lost))
            log.info(
                "MCP server %r: connection lost; reconnecting to call %s again", self.name, tool
            )
        raise AssertionError("unreachable")

    def _new_call(self, tool: str, ctx: ToolContext | None, shown_as: str) -> Call:
        now = asyncio.get_running_loop().time()
        cap_at = now + max(self.settings.call_cap_s, self.settings.call_timeout_s)
        return Call(tool, shown_as, ctx, self.settings.call_timeout_s, cap_at)

    async def _timed(
        self, client: Client, call: Call, arguments: dict[str, Any], as_task: bool
    ) -> CallToolResult:
        """The call under its limits: idle (started again by each progress notification)
        and the hard cap."""

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            await self.inflight.progressed(call, progress, total, message)

        async with asyncio.timeout(self.settings.call_timeout_s) as timer:
            call.timer = timer
            if as_task:
                return await call_as_task(
                    client, self.inflight, call, arguments, self.settings.task_poll_s
                )
            return await client.call_tool(call.tool, arguments, progress_callback=on_progress)

    async def _lost(self, tool: str, repeatable: bool, exc: BaseException) -> str:
        """What to tell the model of a call the connection broke under."""
        head = f"MCP server {self.name!r} closed the connection during {tool} ({said(exc)})"
        if repeatable:
            return f"{head}, twice. It seems to be failing: go on without its tools for now."
        try:  # is it back (a crash, restarted) or down? Ready for the next call either way.
            await self.client()
        except McpServerError as down:
            return f"{head}, and it cannot be started again now. {down}. Go on without it."
        return (
            f"{head}; the server may have crashed. It may or may not have done it: check "
            "before calling it again."
        )
