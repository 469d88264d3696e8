"""A run whose tool asks for a form, for the chat adapters' tests: a request the router
answers directly; its agent calls ``shop__book_table`` (the tests' own MCP server,
tests/fakes/mcp_elicit_server.py, over stdio), which asks the thread for the booking's
details, and finishes with what the server said."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from core.config import Settings
from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from core.process.tools_start import start_tools, stop_tools
from core.services import Services
from tests.scenarios import calls_made

SERVER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_elicit_server.py")
TASK = "Book us a table for tonight."
TOOL = "shop__book_table"
BOOKED = "Booked 4 on the terrace for Ada (vegan menu, no email)."
# What a person types in the form, per field, and one answer the form refuses.
GOOD = {"name": "Ada", "guests": "4", "seating": "terrace", "vegan": True}
TOO_MANY = {**GOOD, "guests": "20"}
TOO_MANY_SAID = "Guests must be at most 12."


def _books(request: LLMRequest) -> Reply:
    if calls_made(request, TOOL) == 0:
        return Reply(calls=(call(TOOL, {}),))
    said = next(m.content for m in reversed(request.messages) if m.role == "tool")
    return Reply(calls=(call("finish", {"result": f"The shop says: {said}"}),))


def booker() -> ScriptedModel:
    """The model: the router answers directly; the agent books, then finishes."""
    model = ScriptedModel(responder=_books)
    direct = {"path": "direct", "reason": "a simple request"}
    return model.script("router", Reply(calls=(call("submit_router", direct),)))


def with_shop(s: Settings, timeout_s: float = 60.0) -> Settings:
    """``s`` with the shop's MCP server and the form's time-out."""
    stdio = {"transport": "stdio", "command": sys.executable, "args": [SERVER]}
    mcp = s.mcp.model_validate(
        {
            **s.mcp.model_dump(),
            "servers": {"shop": stdio},
            "elicitation_timeout_s": timeout_s,
            "connect_timeout_s": 10.0,
        }
    )
    return s.model_copy(update={"mcp": mcp})


@contextlib.asynccontextmanager
async def shop_tools(svc: Services) -> AsyncIterator[Services]:
    """``svc`` with the shop's tools registered (its session closed afterwards)."""
    await start_tools(svc)
    try:
        assert TOOL in svc.tools, svc.tools.unavailable
        yield svc
    finally:
        await stop_tools(svc)
