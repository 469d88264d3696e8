"""The MCP servers of one process: a session per configured, enabled server."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

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

    def get(self, name: str) -> McpConnection | None:
        return self.connections.get(name)

    async def aclose(self) -> None:
        """Close every session (each server's process ends, HTTP sessions are ended)."""
        await asyncio.gather(*(c.aclose() for c in self.connections.values()))
