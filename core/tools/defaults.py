"""The tools every process registers: helpers and finish, the society, the human tools,
the workspace's files, and, as the settings allow, code, web and image tools."""

from __future__ import annotations

from core.config import Settings
from core.tools.builtin import BUILTIN_TOOLS
from core.tools.files import FILE_TOOLS
from core.tools.humans import HUMAN_TOOLS
from core.tools.registry import ToolRegistry
from core.tools.society import SOCIETY_TOOLS


def default_registry(settings: Settings | None = None) -> ToolRegistry:
    """Every built-in tool; with ``settings``, also the tools they make available (each
    unavailable one with the reason) and minus those ``tools.disabled`` switches off.
    MCP servers' tools are added once their sessions connect (``core.tools.mcp``)."""
    registry = ToolRegistry([*BUILTIN_TOOLS, *SOCIETY_TOOLS, *HUMAN_TOOLS, *FILE_TOOLS])
    if settings is not None:
        registry.disable(settings.tools.disabled)
    return registry
