"""The tools' start and stop steps of every process that runs turns, plans or starts runs
(the Celery worker, embedded mode, the bot publishing to workers, ``caramba tools``): the
MCP servers' sessions are opened and their tools added to the registry at start, and
closed at shutdown."""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING

from core.config import Settings
from core.services import Services
from core.tools.registry import ToolRegistry

if TYPE_CHECKING:
    # Imported when a server is configured: the SDK takes about a second to import.
    from core.tools.mcp import McpHub

log = logging.getLogger(__name__)

# The sessions behind each registry's MCP tools (one registry per process, in practice).
_HUBS: weakref.WeakKeyDictionary[ToolRegistry, McpHub] = weakref.WeakKeyDictionary()


async def start_tools(svc: Services) -> None:
    """Connect the configured MCP servers (all at once, each within
    ``mcp.connect_timeout_s``) and add their tools to ``svc.tools``; a server that
    cannot start leaves its tools unavailable with the reason. Call once per process,
    on the loop its turns run on; :func:`stop_tools` at shutdown."""
    await open_mcp_tools(svc.tools, svc.settings)


async def stop_tools(svc: Services) -> None:
    """Close the MCP sessions :func:`start_tools` opened (their stdio servers end)."""
    await close_mcp_tools(svc.tools)


async def open_mcp_tools(registry: ToolRegistry, settings: Settings) -> McpHub | None:
    """:func:`start_tools` for a bare registry (``caramba tools`` lists them, then closes
    them with :func:`close_mcp_tools`); None if no server is enabled. Idempotent."""
    if registry in _HUBS:
        return _HUBS[registry]
    if not any(s.enabled for s in settings.mcp.servers.values()):
        return None
    from core.tools.mcp import McpHub, add_mcp_tools

    hub = _HUBS[registry] = McpHub(settings.mcp)
    await add_mcp_tools(registry, settings, hub)
    offered = sum(1 for t in registry.tools() if t.server)
    log.info("MCP: %d servers, %d tools offered", len(hub.connections), offered)
    return hub


async def close_mcp_tools(registry: ToolRegistry) -> None:
    """Close the sessions :func:`open_mcp_tools` opened for ``registry``."""
    hub = _HUBS.pop(registry, None)
    if hub is not None:
        await hub.aclose()


async def all_tools(settings: Settings) -> ToolRegistry:
    """Every tool these settings offer, the MCP servers' included (each server started to
    list its tools, then stopped) and why any is unavailable: for ``caramba tools``."""
    from core.tools.defaults import default_registry

    registry = default_registry(settings)
    try:
        await open_mcp_tools(registry, settings)
    finally:
        await close_mcp_tools(registry)
    return registry
