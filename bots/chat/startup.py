"""A chat bot's process once it has started: what start-up made is kept out of the garbage
collector's way, so that its full collections do not pause the event loop that answers
the platform (acknowledgements within Slack's and Discord's 3 s)."""

from __future__ import annotations

from core.process import heap


def freeze_startup_objects() -> None:
    """Move what start-up made (modules, settings, clients: ~140,000 objects that live as
    long as the process) into the collector's permanent generation. Otherwise each full
    collection walks them all: 120 ms of CPU here, 200-400 ms of a stalled event loop
    under load (bench/discord_ack.py; about 20 ms frozen)."""
    heap.freeze()
