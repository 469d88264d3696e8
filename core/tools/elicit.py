"""MCP elicitation: a server asks a person for input in the middle of a tool call.

The MCP client calls :func:`elicit` when a server sends ``elicitation/create``; the
answer (accept with content, decline, or cancel) goes back to the server. The request
becomes a form in the run's thread; the call waits for it, bounded by a time-out.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from core.agent.context import ToolContext

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ElicitRequest:
    """What an MCP server asks of a person, in core's own words."""

    server: str  # the MCP server's configured name
    message: str  # what the server asks
    schema: dict[str, Any] | None  # form mode: the requestedSchema (flat object)
    url: str | None  # URL mode: the link the person opens
    elicitation_id: str | None = None


@dataclass(frozen=True)
class ElicitAnswer:
    """The person's answer, as the server receives it."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


async def elicit(ctx: ToolContext, request: ElicitRequest) -> ElicitAnswer:
    """Ask the run's people through a form in its thread and wait for their answer."""
    log.info(
        "elicitation from MCP server %s in run %s cancelled: forms are not wired yet",
        request.server,
        ctx.run_id,
    )
    return ElicitAnswer(action="cancel")
