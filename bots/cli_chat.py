"""``caramba slack``, ``caramba discord`` and ``caramba web``: the chat adapters' processes
(registered on the command line's app by :mod:`bots.cli`)."""

from __future__ import annotations

import typer

from bots.cli_common import configuration_error, redis_or_exit, serve, settings_or_exit
from core.errors import CarambaError


def slack(
    host: str = typer.Option("0.0.0.0", "--host", help="Interface to listen on."),
    port: int = typer.Option(3000, "--port", help="Port for Slack's requests (/slack/events)."),
) -> None:
    """Serve the Slack bot: HTTP mode at /slack/events, or Socket Mode if SLACK_APP_TOKEN
    is set."""
    from bots.slack.main import run_slack
    from bots.slack.secrets import SlackSecrets

    settings = settings_or_exit()
    redis_or_exit(settings)
    try:
        secrets = SlackSecrets.from_env()
    except CarambaError as exc:
        raise configuration_error(exc) from None
    serve(run_slack(settings, secrets, host, port), settings)


def discord(
    sync: bool = typer.Option(
        False,
        "--sync",
        help="Publish the /caramba slash command on start even if discord.sync_commands "
        "is off (to discord.command_guild when set, else globally).",
    ),
) -> None:
    """Run the Discord bot (DISCORD_BOT_TOKEN): mentions and /caramba in its servers."""
    from bots.discord.main import discord_token, run_discord

    settings = settings_or_exit()
    redis_or_exit(settings)
    try:
        token = discord_token()
    except CarambaError as exc:
        raise configuration_error(exc) from None
    serve(run_discord(settings, token, sync), settings)


def web(
    host: str | None = typer.Option(None, "--host", help="Interface (default web_ui.host)."),
    port: int | None = typer.Option(None, "--port", help="Port (default web_ui.port)."),
    demo: bool = typer.Option(
        False,
        "--demo",
        help="Everything in this process with the scripted offline model: no services, "
        "no keys (try the product in a browser).",
    ),
    pace: float = typer.Option(
        1.0,
        "--pace",
        min=0,
        help="With --demo: seconds each scripted model answer takes, so you can watch the "
        "agents work (0: as fast as it goes).",
    ),
) -> None:
    """Serve the web chat (/chat: the same flow as in Slack and Discord) and the run
    inspector (every run's plan, agents, messages, tool calls, files and result, live).
    Open on 127.0.0.1; elsewhere pages need their signed links."""
    from bots.web.main import run_web

    settings = settings_or_exit()
    if not demo:  # the demo has its Redis in the process
        redis_or_exit(settings)
    serve(run_web(settings, host, port, demo=demo, pace_s=pace), settings)
