"""The tools every process registers: helpers and finish, the society, the human tools,
the workspace's files, and, as the settings allow, code, web and image tools."""

from __future__ import annotations

from core.config import Settings
from core.errors import ConfigError
from core.tools.builtin import BUILTIN_TOOLS
from core.tools.code import register as register_code
from core.tools.files import FILE_TOOLS
from core.tools.humans import HUMAN_TOOLS
from core.tools.images import register as register_images
from core.tools.registry import ToolRegistry
from core.tools.society import SOCIETY_TOOLS
from core.tools.web import register as register_web


def default_registry(settings: Settings | None = None) -> ToolRegistry:
    """Every built-in tool; with ``settings``, also the tools they make available (each
    unavailable one with the reason) and minus those ``tools.disabled`` switches off.
    MCP servers' tools are added once their sessions connect (``core.tools.mcp``)."""
    registry = ToolRegistry([*BUILTIN_TOOLS, *SOCIETY_TOOLS, *HUMAN_TOOLS, *FILE_TOOLS])
    if settings is not None:
        register_code(registry, settings)
        register_web(registry, settings)
        register_images(registry, settings)
        _check_disabled(settings, registry)
        registry.disable(settings.tools.disabled)
    return registry


def _check_disabled(settings: Settings, registry: ToolRegistry) -> None:
    """Every agent needs its base tools: switching one off is a configuration mistake."""
    base = set(settings.agents.base_tools)
    off = set(settings.tools.disabled)
    hit = sorted(
        t.name for t in registry.tools() if t.name in base and (t.name in off or t.category in off)
    )
    if hit:
        raise ConfigError(
            f"tools.disabled switches off {', '.join(hit)}, which every agent needs "
            "(agents.base_tools)",
            hint="remove them (or their category) from tools.disabled in config.toml",
        )
