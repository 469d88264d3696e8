"""The tool catalogue: what the planner, the prompt creator, the card and ``caramba
tools`` say about each tool — its one-line purpose, category and risks."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core.config_tools import ToolApprovalSettings
from core.tools.approval import asks_words, needs_approval
from core.tools.registry import Tool, ToolRegistry


def entry(t: Tool) -> dict[str, Any]:
    """One tool as template data: name, purpose, description, category, flags."""
    flags = t.risks() or ["read-only"]
    return {
        "name": t.name,
        "purpose": t.purpose,
        "description": t.description,
        "category": t.category,
        "read_only": t.read_only,
        "network": t.network,
        "runs_code": t.runs_code,
        "server": t.server,
        "flags": flags,
    }


def catalogue(registry: ToolRegistry, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Entries of ``names`` (default: every available tool), grouped by category."""
    tools = registry.tools() if names is None else registry.subset(names)
    return [entry(t) for t in sorted(tools, key=lambda t: (t.category, t.name))]


def risk_of(registry: ToolRegistry, name: str) -> list[str]:
    """What tool ``name`` may touch, in plain words, for approvers. A tool this process
    does not know (an MCP server's, seen by a process that did not connect to it) is
    described from its name."""
    t = registry.get(name)
    if t is not None:
        return t.risks()
    if "__" in name:
        return [f"MCP server {name.split('__', 1)[0]}"]
    return []


# Tools that act only inside the run (finishing, messaging the cohort): no risk to show.
_INSIDE = frozenset({"core", "team"})


def agent_risks(
    registry: ToolRegistry, names: Iterable[str], policy: ToolApprovalSettings | None = None
) -> tuple[str, ...]:
    """For an agent's tools, the ones approvers should notice: ``"run_code: runs code
    (sandboxed), changes things"``, in the agent's order; with ``policy``, the tools
    whose calls wait for a person say so (``asks a person before each call``)."""
    out = []
    for name in names:
        t = registry.get(name)
        if t is not None and t.category in _INSIDE:
            continue
        risks = risk_of(registry, name)
        if t is not None and policy is not None and needs_approval(policy, t):
            risks = [*risks, asks_words(policy, t)]
        if risks:
            out.append(f"{name}: {', '.join(risks)}")
    return tuple(out)
