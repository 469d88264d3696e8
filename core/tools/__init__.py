"""Typed tools: async functions whose schema comes from type hints and docstrings."""

from core.agent.context import ToolContext
from core.tools.registry import Tool, ToolRegistry, ToolResult, tool

__all__ = ["Tool", "ToolContext", "ToolRegistry", "ToolResult", "tool"]
