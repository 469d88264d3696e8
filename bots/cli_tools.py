"""``caramba tools``: every tool agents may use, and why a configured one is unavailable."""

from __future__ import annotations

import asyncio

from bots.cli_common import console, settings_or_exit


def tools() -> None:
    """List every tool agents may use (built-in and from MCP servers) with its category
    and what it may touch, and why any configured tool is unavailable."""
    from bots.console.tools import tools_table
    from core.process.tools_start import all_tools

    # The MCP servers are started to list their tools, then stopped.
    settings = settings_or_exit()
    registry = asyncio.run(all_tools(settings))
    console.print(tools_table(registry, settings.tools.approval))
    if registry.unavailable:
        console.print(
            "[dim]Unavailable tools are not offered to agents; the reason says what to "
            "install or set (caramba doctor checks the same).[/]"
        )
