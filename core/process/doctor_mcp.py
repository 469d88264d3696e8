"""``caramba doctor``'s MCP check: each server of ``[mcp.servers]`` started as a worker
starts it (``core.process.tools_start``), its tools listed, then stopped — or, in plain
words, why it did not start (with the last lines it wrote to its error output) and which
of its tools are not offered and why."""

from __future__ import annotations

import asyncio

from core.config import Settings
from core.process.doctor_types import Check, Level
from core.process.tools_start import close_mcp_tools, open_mcp_tools
from core.tools.registry import ToolRegistry

# Tool names shown per server; the rest are counted.
SHOWN = 6
_SETTLE_S = 0.2  # a server's last error lines reach the log thread


async def check_mcp(settings: Settings) -> list[Check]:
    """One check per configured server (one line saying so when there is none)."""
    servers = settings.mcp.servers
    if not servers:
        return [Check("MCP", Level.OK, "no servers configured ([mcp.servers] in config.toml)")]
    registry = ToolRegistry()
    tails: dict[str, list[str]] = {}
    try:
        hub = await open_mcp_tools(registry, settings)
        if hub is not None:
            await asyncio.sleep(_SETTLE_S)
            tails = {name: conn.stderr_tail() for name, conn in hub.connections.items()}
    finally:
        await close_mcp_tools(registry)
    checks = []
    for name, server in servers.items():
        label = f"MCP {name}"
        if not server.enabled:
            checks.append(Check(label, Level.WARN, "enabled = false: not started", ""))
            continue
        tools = sorted(t.name.partition("__")[2] for t in registry.tools() if t.server == name)
        mine = {t: why for t, why in registry.unavailable.items() if t.startswith(f"{name}__")}
        reason = mine.pop(f"{name}__*", "")
        if not tools:
            said = tails.get(name, [])
            tail = f" It wrote: {' | '.join(said)}" if said and reason else ""
            checks.append(
                Check(
                    label,
                    Level.FAIL,
                    (reason or "started, but offers no tools") + tail,
                    f"fix mcp.servers.{name} in config.toml (`caramba tools` lists the "
                    "tools), or set enabled = false",
                )
            )
            continue
        more = f" and {len(tools) - SHOWN} more" if len(tools) > SHOWN else ""
        where = server.url if server.transport == "http" else server.command
        skipped = "; ".join(f"{t.partition('__')[2]}: {why}" for t, why in sorted(mine.items()))
        checks.append(
            Check(
                label,
                Level.WARN if skipped else Level.OK,
                f"{len(tools)} tools ({', '.join(tools[:SHOWN])}{more}) from {where}"
                + (f"; not offered: {skipped}" if skipped else ""),
            )
        )
    return checks
