"""A live tool list: each MCP server's tools in the registry as the server lists them now.

At start every server is listed at once; one that cannot start has its tools marked
unavailable with the reason and is tried again in the background (``mcp.retry_s``,
doubling, at most ``mcp.retry_max_s`` apart) until it is up, when its tools appear. A
``notifications/tools/list_changed`` lists the server's tools again: new ones are added,
changed ones replaced, gone ones marked unavailable.
"""

from __future__ import annotations

import asyncio
import logging

from mcp_types import Tool as McpTool

from core.config import Settings
from core.tools.mcp.connect import McpServerError
from core.tools.mcp.connection import McpConnection
from core.tools.mcp.hub import McpHub
from core.tools.mcp.listing import list_tools
from core.tools.mcp.resources import read_resource_tool
from core.tools.mcp.tasks import server_runs_tasks, task_support
from core.tools.mcp.tools import mcp_tool, tool_name, unavailable_name
from core.tools.registry import Tool, ToolRegistry

log = logging.getLogger(__name__)


async def add_mcp_tools(registry: ToolRegistry, settings: Settings, hub: McpHub) -> None:
    """Connect every server of ``hub`` (at once) and register its tools; a server that
    cannot start has its tools marked unavailable with the reason, and is tried again in
    the background. ``tools.disabled`` (names, ``mcp``, or a server's name) applies as to
    any tool."""
    servers = [LiveServer(registry, settings, conn, hub) for conn in hub.connections.values()]
    for live in servers:  # before listing: a change said meanwhile is not missed
        live.conn.on_tools_changed = live.relist
    failures = await asyncio.gather(*(s.refresh() for s in servers))
    for live, why in zip(servers, failures, strict=True):
        if why is not None:
            log.warning("%s", why)
            registry.mark_unavailable(unavailable_name(live.conn.name), why)
            hub.spawn(live.retry(), f"mcp-retry-{live.conn.name}")
    registry.disable(settings.tools.disabled)


class LiveServer:
    """One server's tools in the registry, kept as the server lists them."""

    def __init__(
        self, registry: ToolRegistry, settings: Settings, conn: McpConnection, hub: McpHub
    ) -> None:
        self.registry, self.settings, self.conn, self.hub = registry, settings, conn, hub
        self.names: set[str] = set()  # the registry's tools this server gave
        self._lock = asyncio.Lock()

    async def listing(self) -> list[McpTool] | str:
        """The server's tools, or why there are none."""
        try:
            return await list_tools(self.conn)
        except McpServerError as exc:
            return str(exc)
        except Exception as exc:  # a bug or surprise in one server must not stop the process
            log.exception("MCP server %r: listing its tools failed", self.conn.name)
            why = f"{type(exc).__name__}: {exc}"
            return f"MCP server {self.conn.name!r} could not list its tools: {why}"

    async def refresh(self) -> str | None:
        """List the server's tools and make the registry hold them (one refresh at a
        time, so the newest listing wins); why not, if the server cannot list them."""
        async with self._lock:
            listing = await self.listing()
            if isinstance(listing, str):
                return listing
            await self._apply(listing)
        self.registry.disable(self.settings.tools.disabled)
        return None

    async def relist(self) -> None:
        """The server said its tool list changed: read it again."""
        why = await self.refresh()
        if why is not None:
            log.warning("%s (after it said its tools changed)", why)

    async def retry(self) -> None:
        """Try a server that did not start again, with backoff, until it is up."""
        mcp = self.settings.mcp
        delay = mcp.retry_s
        while True:
            await asyncio.sleep(delay)
            why = await self.refresh()
            if why is None:
                log.info("MCP server %r is up: %d tools", self.conn.name, len(self.names))
                return
            self.registry.mark_unavailable(unavailable_name(self.conn.name), why)
            delay = min(delay * 2, mcp.retry_max_s)

    async def apply(self, listing: list[McpTool]) -> None:
        """Make the registry hold exactly the tools of ``listing`` for this server."""
        async with self._lock:
            await self._apply(listing)

    async def _apply(self, listing: list[McpTool]) -> None:
        wanted = await self._tools(listing)
        self.registry.unavailable.pop(unavailable_name(self.conn.name), None)
        for gone in sorted(self.names - set(wanted)):
            self.registry.mark_unavailable(
                gone, f"no longer offered by MCP server {self.conn.name}"
            )
        for name, t in wanted.items():
            old = self.registry.get(name)
            if old is not None and _same(old, t):
                continue
            if old is not None:
                self.registry.mark_unavailable(name, "")  # replaced just below
            self.registry.register(t)
        self.names = set(wanted)
        if self.conn.name in self.settings.tools.disabled:
            for name in self.names:
                self.registry.mark_unavailable(name, "switched off in config (tools.disabled)")

    async def _tools(self, listing: list[McpTool]) -> dict[str, Tool]:
        """The registry's tools for ``listing`` (those that may be offered)."""
        conn = self.conn
        client = await conn.client()
        tasks = server_runs_tasks(client)
        wanted: dict[str, Tool] = {}
        for remote in listing:
            name = tool_name(conn.name, remote.name)
            if remote.name in conn.server.exclude:
                continue
            if (name in self.registry and name not in self.names) or name in wanted:
                log.warning("MCP tool %s of server %r: name %s is taken; skipped",
                            remote.name, conn.name, name)  # fmt: skip
                continue
            support = task_support(remote)
            if support == "required" and not tasks:
                self.registry.mark_unavailable(
                    name,
                    f"MCP server {conn.name} says {remote.name} must run as a task, but it "
                    "does not offer tasks for tool calls",
                )
                continue
            wanted[name] = mcp_tool(conn, remote, as_task=tasks and support != "forbidden")
        reader = await read_resource_tool(conn)
        if (
            reader is not None
            and reader.name not in wanted
            and (reader.name not in self.registry or reader.name in self.names)
        ):
            wanted[reader.name] = reader
        return wanted


def _same(a: Tool, b: Tool) -> bool:
    def seen(t: Tool) -> tuple[object, ...]:
        return (t.description, t.parameters_json(), t.read_only, tuple(t.risks()))

    return seen(a) == seen(b)
