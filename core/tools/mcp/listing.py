"""What an MCP server lists (its tools, its resources) and a resource read, each within
the call limit, every failure an :class:`McpServerError` in words."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from mcp import Client
from mcp_types import ReadResourceResult, Resource, ResourceTemplate, Tool

from core.tools.mcp.connect import McpServerError, said

if TYPE_CHECKING:
    from core.tools.mcp.connection import McpConnection

_MAX_PAGES = 100  # pages read at most (a server paging forever cannot hang us)
T = TypeVar("T")


async def _pages(
    conn: McpConnection,
    what: str,
    fetch: Callable[[Client, str | None], Awaitable[tuple[list[T], str | None]]],
) -> list[T]:
    client = await conn.client()
    items: list[T] = []
    cursor: str | None = None
    try:
        async with asyncio.timeout(conn.settings.call_timeout_s):
            for _ in range(_MAX_PAGES):
                page, cursor = await fetch(client, cursor)
                items.extend(page)
                if cursor is None:
                    break
    except TimeoutError:
        raise McpServerError(
            conn.name, f"MCP server {conn.name!r} did not list its {what} in time"
        ) from None
    except Exception as exc:
        await conn.discard(client)
        raise McpServerError(
            conn.name, f"MCP server {conn.name!r} could not list its {what}: {said(exc)}"
        ) from exc
    return items


async def list_tools(conn: McpConnection) -> list[Tool]:
    """Every tool the server offers (all pages, read from the server, not a cache)."""

    async def fetch(client: Client, cursor: str | None) -> tuple[list[Tool], str | None]:
        page = await client.list_tools(cursor=cursor, cache_mode="bypass")
        return page.tools, page.next_cursor

    return await _pages(conn, "tools", fetch)


def has_resources(client: Client) -> bool:
    return client.server_capabilities.resources is not None


async def list_resources(conn: McpConnection) -> list[Resource]:
    """Every resource the server lists (none if it offers no resources)."""
    if not has_resources(await conn.client()):
        return []

    async def fetch(client: Client, cursor: str | None) -> tuple[list[Resource], str | None]:
        page = await client.list_resources(cursor=cursor, cache_mode="bypass")
        return page.resources, page.next_cursor

    return await _pages(conn, "resources", fetch)


async def list_templates(conn: McpConnection) -> list[ResourceTemplate]:
    """Every resource template the server lists (URIs with parameters)."""
    if not has_resources(await conn.client()):
        return []

    async def fetch(
        client: Client, cursor: str | None
    ) -> tuple[list[ResourceTemplate], str | None]:
        page = await client.list_resource_templates(cursor=cursor, cache_mode="bypass")
        return page.resource_templates, page.next_cursor

    return await _pages(conn, "resource templates", fetch)


async def read_resource(conn: McpConnection, uri: str) -> ReadResourceResult:
    """The resource at ``uri``; ``McpServerError`` saying why not."""
    client = await conn.client()
    try:
        async with asyncio.timeout(conn.settings.call_timeout_s):
            result: Any = await client.read_resource(uri, cache_mode="bypass")
    except TimeoutError:
        raise McpServerError(
            conn.name, f"MCP server {conn.name!r} did not send {uri} in time"
        ) from None
    except Exception as exc:
        raise McpServerError(
            conn.name, f"MCP server {conn.name!r} could not read {uri}: {said(exc)}"
        ) from exc
    return result  # type: ignore[no-any-return]
