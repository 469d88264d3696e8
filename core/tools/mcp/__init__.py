"""MCP servers' tools: a session per configured server for the whole process
(:class:`McpHub`), whose tools join the registry as ``<server>__<tool>``
(:func:`add_mcp_tools`)."""

from core.tools.mcp.connect import McpServerError
from core.tools.mcp.connection import McpConnection
from core.tools.mcp.hub import McpHub
from core.tools.mcp.live import add_mcp_tools
from core.tools.mcp.tools import tool_name

__all__ = ["McpConnection", "McpHub", "McpServerError", "add_mcp_tools", "tool_name"]
