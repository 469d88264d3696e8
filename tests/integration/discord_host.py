"""``caramba discord`` in a process of its own, with discord.py pointed at the fake
Discord of the test that started it (``FAKE_DISCORD_API``, ``FAKE_DISCORD_GATEWAY``):
the bot of a simulated host (tests.integration.hosts)."""

from __future__ import annotations

import os
import sys

import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route


def main() -> None:
    Route.BASE = os.environ["FAKE_DISCORD_API"]
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(os.environ["FAKE_DISCORD_GATEWAY"])
    from bots.cli import main as caramba

    sys.argv = ["caramba", "discord"]
    caramba()


if __name__ == "__main__":
    main()
