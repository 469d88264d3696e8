"""The link to a run's inspector page (``bots.chat.links.run_link``) on the Discord
messages that carry it (the status message, the proposal card): a link button beside
their own, "Inspect this run". A link button opens the page in the browser; Discord sends
the bot no interaction for it."""

from __future__ import annotations

import discord

INSPECT = "Inspect this run"


def with_link(view: discord.ui.View | None, url: str) -> discord.ui.View | None:
    """``view`` (or a new one) with the link button to ``url``; ``view`` as it is when
    ``url`` is ""."""
    if not url:
        return view
    view = view if view is not None else discord.ui.View(timeout=None)
    view.add_item(discord.ui.Button(style=discord.ButtonStyle.link, label=INSPECT, url=url))
    return view
