"""A card's layout (``bots.discord.card``: JSON blocks, as the outbox keeps them) as a
Components V2 ``discord.ui.LayoutView``: one container with the accent colour, its text
blocks as ``TextDisplay``, separators, each agent a ``Section`` with an Edit button beside
it while the proposal is open, and Approve / Edit / Reject (and the inspector's link) as
an action row. discord.py sets the message's Components V2 flag (1 << 15) for it; such a
message carries no content and no embeds."""

from __future__ import annotations

from typing import Any

import discord

from bots.discord.inspector import INSPECT
from bots.discord.views import AgentEditButton

# Accent colours: a pause or a request waiting for someone, and one decided.
WAITING, DONE = 0xFEE75C, 0x99AAB5


def _block(block: dict[str, Any], run_id: str, open_: bool) -> discord.ui.Item[Any]:
    if block.get("sep"):
        return discord.ui.Separator()
    text = discord.ui.TextDisplay[Any](str(block.get("text", "")) or "-")
    if open_ and block.get("agent"):
        button = AgentEditButton(run_id, str(block["agent"]))
        return discord.ui.Section[Any](text, accessory=button)
    return text


def layout_view(
    payload: dict[str, Any], buttons: list[discord.ui.Item[Any]]
) -> discord.ui.LayoutView:
    """The view for a layout payload (``layout``, ``buttons``, ``run``, ``link``) with
    ``buttons`` in a row under its text (an agent's Edit beside it while a card is open)."""
    layout = payload.get("layout") or {}
    run_id = str(payload.get("run", ""))
    open_ = payload.get("buttons") == "card" and bool(run_id)
    container = discord.ui.Container[Any](accent_colour=int(layout.get("accent") or 0) or None)
    for block in layout.get("blocks") or []:
        container.add_item(_block(block, run_id, open_))
    row = list(buttons)
    if payload.get("link"):
        row.append(
            discord.ui.Button(style=discord.ButtonStyle.link, label=INSPECT, url=payload["link"])
        )
    if row:
        container.add_item(discord.ui.ActionRow[Any](*row))
    view = discord.ui.LayoutView(timeout=None)
    view.add_item(container)
    return view


def text_layout(text: str, accent: int) -> dict[str, Any]:
    """A layout of one text (a pause, a tool call's request)."""
    return {"blocks": [{"text": text or "-"}], "accent": accent}


def shown_text(message: discord.Message) -> str:
    """What ``message`` says: its text displays (Components V2), else its content."""
    found: list[str] = []

    def walk(components: list[Any]) -> None:
        for c in components:
            if isinstance(c, discord.components.TextDisplay):
                found.append(c.content)
            walk(list(getattr(c, "children", []) or []))

    walk(list(message.components))
    return "\n".join(found) or message.content
