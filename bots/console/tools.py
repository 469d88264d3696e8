"""``caramba tools``: every tool agents may be given, and why a configured one is not."""

from __future__ import annotations

from rich.table import Table

from bots.console.text import escape
from core.config_tools import ToolApprovalSettings
from core.tools.catalogue import catalogue
from core.tools.registry import ToolRegistry


def tools_table(registry: ToolRegistry, policy: ToolApprovalSettings | None = None) -> Table:
    """Available tools by category, with what they may touch (and, with ``policy``,
    whether their calls wait for a person's approval); then the unavailable ones."""
    table = Table(show_lines=False, expand=True)
    table.add_column("tool", no_wrap=True)
    table.add_column("category", no_wrap=True)
    table.add_column("may touch", ratio=1)
    table.add_column("what it does", ratio=3)
    for e in catalogue(registry):
        asks = policy is not None and registry.asks(e["name"], policy)
        flags = ", ".join([*e["flags"], *(["asks a person before each call"] if asks else [])])
        colour = "green" if e["flags"] == ["read-only"] and not asks else "yellow"
        table.add_row(
            escape(e["name"]), e["category"], f"[{colour}]{escape(flags)}[/]", escape(e["purpose"])
        )
    for name, reason in sorted(registry.unavailable.items()):
        table.add_row(escape(name), "", "[red]unavailable[/]", escape(reason))
    return table
