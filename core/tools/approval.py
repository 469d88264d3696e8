"""Which tool calls need a person's approval before they run (``[tools.approval]``), which
tools the direct path may offer without any, and how a waiting call is shown to people.

A call asks when its tool is named, or its category or MCP server is, or when what the
server says of it matches a switched-on rule (destructive, open-world, not read-only);
``never`` wins over all of them. The direct path (the router's "direct", the UI agent
answering with no card) offers only tools that are read-only, closed-world (no internet,
no outside system) and ask nobody. Pure: no I/O (``core.agent.approvals`` does the
wait, asking through the registry: ``ToolRegistry.asks``; arguments are masked by
``core.types.approvals.shown_arguments``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.config_tools import ToolApprovalSettings
from core.types.approvals import shown_arguments

if TYPE_CHECKING:
    from core.tools.registry import Tool

__all__ = ["asks_words", "direct_safe", "needs_approval", "shown_arguments"]


def needs_approval(policy: ToolApprovalSettings, t: Tool) -> bool:
    """Whether every call of ``t`` waits for a person (a grant for the run aside)."""
    if t.name in policy.never:
        return False
    if t.name in policy.tools or t.category in policy.categories:
        return True
    if t.server and t.server in policy.servers:
        return True
    if policy.destructive and t.destructive:
        return True
    if policy.open_world and (t.open_world or t.network):
        return True
    return policy.not_read_only and not t.read_only


def direct_safe(policy: ToolApprovalSettings, t: Tool) -> bool:
    """Whether the direct path (no card, nobody approved anything) may offer ``t``:
    read-only, closed-world, and asking nobody."""
    if not t.read_only or t.open_world or t.network:
        return False
    return not needs_approval(policy, t)


def asks_words(policy: ToolApprovalSettings, t: Tool) -> str:
    """What the card adds to a tool that asks: ``asks a person before each call``."""
    return "asks a person before each call" if needs_approval(policy, t) else ""
