"""Opening one MCP server's session from its settings: the stdio command or the HTTP
endpoint, secrets read from the environment at connect time, and failures told in words.

Secret values (``env_from``, ``headers_from``) are read here and handed to the SDK only:
they never appear in a message or a log line (only the variables' names do).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Mapping
from typing import Any, TextIO

import httpx2
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CONNECTION_CLOSED, Implementation

from core.config_tools import McpServer, McpSettings
from core.errors import RunError

CLIENT_INFO = Implementation(name="caramba", version="0.1")

# The HTTP client's read timeout: a streamable HTTP server may hold a response stream
# open; each call has its own time limit (``mcp.call_timeout_s``) besides.
_STREAM_READ_S = 300.0


class McpServerError(RunError):
    """An MCP server could not be reached, started or used; the message says what to do."""

    def __init__(self, server: str, message: str) -> None:
        self.server = server
        super().__init__(message)


def secrets(name: str, server: McpServer, environ: Mapping[str, str]) -> dict[str, str]:
    """The server's secret environment (stdio) or headers (http), by target name, read from
    ``environ``; ``McpServerError`` naming the variable to set if one is missing."""
    wanted = server.env_from if server.transport == "stdio" else server.headers_from
    missing = sorted({var for var in wanted.values() if not environ.get(var)})
    if missing:
        what = "the variable" if len(missing) == 1 else "the variables"
        raise McpServerError(
            name,
            f"MCP server {name!r} is not started: set {what} {', '.join(missing)} "
            f"(named in mcp.servers.{name} of config.toml)",
        )
    return {target: environ[var] for target, var in wanted.items()}


@contextlib.asynccontextmanager
async def open_client(
    name: str,
    server: McpServer,
    settings: McpSettings,
    environ: Mapping[str, str] | None = None,
    *,
    errlog: TextIO | None = None,
    **callbacks: Any,
) -> AsyncIterator[Client]:
    """A connected SDK client (handshake done). Enter and exit it in the same task: the SDK
    runs its transport in anyio task groups tied to the task that entered them.
    ``errlog``: where a stdio server's stderr goes; ``callbacks``: the SDK ``Client``'s
    (``elicitation_callback``, ``message_handler``), which also declare the capabilities."""
    env = os.environ if environ is None else environ
    secret = secrets(name, server, env)
    async with contextlib.AsyncExitStack() as stack:
        statuses: list[int] = []
        transport: Any
        if server.transport == "stdio":
            params = StdioServerParameters(
                command=server.command, args=list(server.args), env={**server.env, **secret}
            )
            # The server's stderr goes to the process's own (a file descriptor), not to
            # whatever sys.stderr is now (a test runner's or a CLI runner's buffer has none).
            transport = stdio_client(params, errlog=errlog or _server_log())
        else:

            async def record(response: httpx2.Response) -> None:
                if response.status_code >= 400:
                    statuses.append(response.status_code)

            http = httpx2.AsyncClient(
                headers=secret,
                timeout=httpx2.Timeout(settings.connect_timeout_s, read=_STREAM_READ_S),
                event_hooks={"response": [record]},
            )
            await stack.enter_async_context(http)
            transport = streamable_http_client(server.url, http_client=http)
        # No response cache: a listing is read again when the server says it changed.
        client = Client(transport, client_info=CLIENT_INFO, cache=None, **callbacks)
        try:
            await stack.enter_async_context(client)
        except Exception as exc:
            raise McpServerError(name, start_failure(name, server, exc, statuses)) from exc
        yield client


def _server_log() -> TextIO:
    log = sys.__stderr__
    if log is not None:
        try:
            log.fileno()
            return log
        except (OSError, ValueError):
            pass
    return open(os.devnull, "w")  # lives as long as the server


def start_failure(name: str, server: McpServer, exc: BaseException, statuses: list[int]) -> str:
    """Why the server did not start, in words, with what to do."""
    cause = leaf(exc)
    where = f"mcp.servers.{name}"
    if isinstance(cause, McpServerError):
        return str(cause)
    if isinstance(cause, FileNotFoundError) and server.transport == "stdio":
        why = f"command {server.command!r} not found (install it, or fix {where}.command)"
    elif isinstance(cause, PermissionError) and server.transport == "stdio":
        why = f"command {server.command!r} cannot be run (permission denied)"
    elif statuses:
        code = statuses[-1]
        hint = " (check the credentials in " + ", ".join(server.headers_from.values()) + ")"
        why = f"{server.url} answered HTTP {code}" + (
            hint if code in (401, 403) and server.headers_from else ""
        )
    elif isinstance(cause, httpx2.TransportError):
        why = f"cannot reach {server.url} ({type(cause).__name__}; is the server running?)"
    elif isinstance(cause, MCPError) and cause.code == CONNECTION_CLOSED:
        why = (
            "it exited or closed the connection while starting (its error output is in "
            "this process's log)"
            if server.transport == "stdio"
            else f"{server.url} closed the connection while starting"
        )
    elif isinstance(cause, MCPError):
        why = f"it answered with an error: {cause.error.message}"
    else:
        why = f"{type(cause).__name__}: {cause}"
    return f"MCP server {name!r} did not start: {why}"


def leaf(exc: BaseException) -> BaseException:
    """The first real error inside anyio's (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def said(exc: BaseException) -> str:
    cause = leaf(exc)
    if isinstance(cause, MCPError):
        return cause.message
    return f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
