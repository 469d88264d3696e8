"""The tools every process registers: helpers and finish, the society, the human tools."""

from __future__ import annotations

from core.tools.builtin import BUILTIN_TOOLS
from core.tools.humans import HUMAN_TOOLS
from core.tools.registry import ToolRegistry
from core.tools.society import SOCIETY_TOOLS


def default_registry() -> ToolRegistry:
    """Every built-in tool: the helpers, finish, the society tools, the human tools."""
    return ToolRegistry([*BUILTIN_TOOLS, *SOCIETY_TOOLS, *HUMAN_TOOLS])
