"""``caramba doctor``'s Discord check: DISCORD_BOT_TOKEN set, and accepted by Discord (one
``GET /users/@me`` at ``discord.api_url``, the call a bot makes first when it logs in)."""

from __future__ import annotations

import os

import httpx

from core.config import Settings
from core.process.doctor_types import Check, Level

TOKEN_VARIABLE = "DISCORD_BOT_TOKEN"
NAME = "Discord token"
_TIMEOUT_S = 5.0


async def check_discord(settings: Settings, *, call_api: bool = True) -> Check:
    """Whether the Discord bot could log in. Without the variable the adapter is off (a
    warning); a token Discord refuses fails; Discord unreachable is a warning (the bot
    retries when it starts)."""
    token = os.environ.get(TOKEN_VARIABLE, "")
    if not token:
        return Check(
            NAME,
            Level.WARN,
            f"not set: {TOKEN_VARIABLE} (Discord adapter disabled)",
            f"export {TOKEN_VARIABLE}=... to use Discord (README: Discord)",
        )
    if not call_api:
        return Check(NAME, Level.OK, "present")
    url = settings.discord.api_url.rstrip("/") + "/users/@me"
    try:
        async with httpx.AsyncClient(timeout=_TIMEOUT_S) as client:
            resp = await client.get(url, headers={"Authorization": f"Bot {token}"})
    except httpx.HTTPError as exc:
        return Check(
            NAME,
            Level.WARN,
            f"present, but {url} could not be reached: {type(exc).__name__}",
            "check the network (or discord.api_url); the bot retries when it starts",
        )
    if resp.status_code == 200:
        me = resp.json()
        return Check(NAME, Level.OK, f"accepted: the bot is {me.get('username', '?')}")
    if resp.status_code == 401:
        return Check(
            NAME,
            Level.FAIL,
            f"Discord refuses {TOKEN_VARIABLE} (401 Unauthorized)",
            "copy the token again (Developer Portal → your application → Bot → Reset Token)",
        )
    return Check(
        NAME,
        Level.WARN,
        f"present, but Discord answered HTTP {resp.status_code} to {url}",
        "try again later; see https://discordstatus.com",
    )
