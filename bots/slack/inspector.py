"""The link to a run's inspector page (``bots.chat.links.run_link``) on the Slack
messages that carry it: the status message and the proposal card, as a context line
under them ("Inspect this run"). A plain link, not a URL button: a button would send an
interaction to the app on every click."""

from __future__ import annotations

from typing import Any

from bots.slack.text import MAX_BLOCKS

INSPECT = "Inspect this run"


def with_link(blocks: list[dict[str, Any]], url: str) -> list[dict[str, Any]]:
    """``blocks`` with the link to ``url`` below their text, above their buttons (none
    when ``url`` is "" or the message is full)."""
    if not url or len(blocks) >= MAX_BLOCKS:
        return blocks
    # The URL is ours ([web_ui] base_url and a base64 token); mrkdwn needs & < > escaped.
    href = url.replace("&", "&amp;").replace("<", "%3C").replace(">", "%3E").replace("|", "%7C")
    text = {"type": "mrkdwn", "text": f":mag: <{href}|{INSPECT}>"}
    line = {"type": "context", "elements": [text]}
    at = len(blocks) - 1 if blocks and blocks[-1].get("type") == "actions" else len(blocks)
    return [*blocks[:at], line, *blocks[at:]]
