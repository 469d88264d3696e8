"""A real MCP server for the elicitation tests, written with the official SDK
(``MCPServer``): tools that ask the person in the middle of a call.

    python tests/fakes/mcp_elicit_server.py          # over stdio

- ``book_table``: a form (name, guests 1–12, seating as titled choices, vegan yes/no, an
  email) through ``Resolve`` + ``Elicit``, then says what was booked, or why not;
- ``confirm``: a form with no fields (accept or decline only);
- ``sign_in``: URL mode (an input-required result, 2026): the person opens a link,
  then says done.
"""

from __future__ import annotations

import sys
from typing import Annotated, Literal

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from mcp.types import ToolAnnotations
from mcp_types import ElicitRequest, ElicitRequestURLParams, ElicitResult, InputRequiredResult
from pydantic import BaseModel, Field

server = MCPServer("elicit", log_level="WARNING")


class Booking(BaseModel):
    name: str = Field(title="Your name", min_length=2)
    guests: int = Field(title="Guests", ge=1, le=12)
    seating: Literal["inside", "terrace"] = Field(title="Seating")
    vegan: bool = Field(default=False, title="Vegan menu")
    email: str | None = Field(default=None, title="Email", json_schema_extra={"format": "email"})


def _ask_booking() -> Elicit[Booking]:
    return Elicit("Who is the table for?", Booking)


# Read-only and closed-world (it only asks): the direct path may offer it with no card.
@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
def book_table(answer: Annotated[ElicitationResult[Booking], Resolve(_ask_booking)]) -> str:
    """Book a table: asks the person for the booking's details."""
    if isinstance(answer, AcceptedElicitation):
        b = answer.data
        menu, email = "vegan" if b.vegan else "regular", b.email or "no email"
        return f"Booked {b.guests} on the {b.seating} for {b.name} ({menu} menu, {email})."
    return f"Not booked ({answer.action})."


class Nothing(BaseModel):
    pass


def _ask_confirm() -> Elicit[Nothing]:
    return Elicit("Delete the old bookings?", Nothing)


@server.tool()
def confirm(answer: Annotated[ElicitationResult[Nothing], Resolve(_ask_confirm)]) -> str:
    """Ask the person to confirm, with nothing to fill in."""
    return f"Confirmation: {answer.action}."


@server.tool()
async def sign_in(ctx: Context) -> str | InputRequiredResult:
    """Ask the person to sign in at a link (URL mode), the 2026 way: the call answers
    that it needs input, and the client calls again with the person's answer."""
    answer = (ctx.input_responses or {}).get("signin")
    if isinstance(answer, ElicitResult):
        return f"Sign-in: {answer.action}."
    link = ElicitRequestURLParams(
        message="Sign in to the booking site", url="https://booking.example/sign-in?state=42"
    )
    return InputRequiredResult(
        input_requests={"signin": ElicitRequest(params=link)}, request_state="signin"
    )


if __name__ == "__main__":
    server.run("stdio")
    sys.exit(0)
