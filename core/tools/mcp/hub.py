"""The MCP servers of one process: a session per configured, enabled server, and the
background work about them (a server down at start tried again)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping
from typing import Any

from core.config_tools import McpSettings
from core.tools.mcp.connection import McpConnection


class McpHub:
    """One :class:`McpConnection` per enabled server of ``[mcp.servers]``, for the whole
    process (every turn and run shares them); :meth:`aclose` at shutdown."""

    def __init__(self, settings: McpSettings, environ: Mapping[str, str] | None = None) -> None:
        self.settings = settings
        self.connections: dict[str, McpConnection] = {
            name: McpConnection(name, server, settings, environ)
            for name, server in settings.servers.items()
            if server.enabled
        }
        self._background: set[asyncio.Task[None]] = set()

    def get(self, name: str) -> McpConnection | None:
        return self.connections.get(name)

    def spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        """Run ``work`` in the background until it ends or the hub closes."""
        task = asyncio.create_task(work, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def aclose(self) -> None:
        """Stop the background work; close every session (each server's process ends,
        HTTP sessions are ended)."""
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await asyncio.gather(*(c.aclose() for c in self.connections.values()))
