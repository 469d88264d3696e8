"""``caramba doctor``'s MCP check: each server of ``[mcp.servers]`` started as a worker
starts it (``core.process.tools_start``), its tools listed, then stopped — or the reason it
did not start."""

from __future__ import annotations

from core.config import Settings
from core.process.doctor_types import Check, Level
from core.process.tools_start import close_mcp_tools, open_mcp_tools
from core.tools.registry import ToolRegistry

# Tool names shown per server; the rest are counted.
SHOWN = 6


async def check_mcp(settings: Settings) -> list[Check]:
    """One check per configured server (one line saying so when there is none)."""
    servers = settings.mcp.servers
    if not servers:
        return [Check("MCP", Level.OK, "no servers configured ([mcp.servers] in config.toml)")]
    registry = ToolRegistry()
    try:
        await open_mcp_tools(registry, settings)
    finally:
        await close_mcp_tools(registry)
    checks = []
    for name, server in servers.items():
        label = f"MCP {name}"
        if not server.enabled:
            checks.append(Check(label, Level.WARN, "enabled = false: not started", ""))
            continue
        tools = sorted(t.name.partition("__")[2] for t in registry.tools() if t.server == name)
        reason = next(
            (why for tool, why in registry.unavailable.items() if tool.startswith(f"{name}__")),
            "",
        )
        if not tools:
            checks.append(
                Check(
                    label,
                    Level.FAIL,
                    reason or "started, but offers no tools",
                    f"fix mcp.servers.{name} in config.toml (`caramba tools` lists the "
                    "tools), or set enabled = false",
                )
            )
            continue
        more = f" and {len(tools) - SHOWN} more" if len(tools) > SHOWN else ""
        where = server.url if server.transport == "http" else server.command
        checks.append(
            Check(
                label,
                Level.OK,
                f"{len(tools)} tools ({', '.join(tools[:SHOWN])}{more}) from {where}",
            )
        )
    return checks
