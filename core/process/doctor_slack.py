"""``caramba doctor``'s Slack checks: which of the two ways to connect the variables set up
(HTTP mode: bot token + signing secret; Socket Mode: bot token + app-level token), and the
bot token tried with Slack itself (one ``auth.test`` at ``slack.api_url``, the call the
bot makes first). Core speaks no Slack SDK: the call is plain HTTP, as the SDK makes it."""

from __future__ import annotations

import os

import httpx

from core.config import Settings
from core.process.doctor_types import Check, Level

BOT_TOKEN = "SLACK_BOT_TOKEN"
SIGNING_SECRET = "SLACK_SIGNING_SECRET"
APP_TOKEN = "SLACK_APP_TOKEN"
EVENTS_PATH = "/slack/events"
MODE = "Slack"
TOKEN = "Slack token"
_TIMEOUT_S = 5.0
# Slack's errors that mean the token itself is wrong (not the network, not Slack).
_BAD_TOKEN = ("invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired")


def slack_mode(environ: dict[str, str] | None = None) -> Check:
    """Which way ``caramba slack`` would connect, or which variable is missing."""
    env = os.environ if environ is None else environ
    bot, secret, app = (env.get(n, "") for n in (BOT_TOKEN, SIGNING_SECRET, APP_TOKEN))
    if not (bot or secret or app):
        return Check(
            MODE,
            Level.WARN,
            f"not set up: no {BOT_TOKEN} (Slack adapter disabled)",
            f"for HTTP mode export {BOT_TOKEN}=xoxb-... {SIGNING_SECRET}=...; for Socket "
            f"Mode export {BOT_TOKEN}=xoxb-... {APP_TOKEN}=xapp-... (README: Deploy to Slack)",
        )
    if not bot:
        return Check(
            MODE,
            Level.FAIL,
            f"{BOT_TOKEN} is not set: `caramba slack` cannot start",
            f"export {BOT_TOKEN}=xoxb-... (OAuth & Permissions → Bot User OAuth Token)",
        )
    if app:
        if not app.startswith("xapp-"):
            return Check(
                MODE,
                Level.FAIL,
                f"Socket Mode, but {APP_TOKEN} is not an app-level token (xapp-...)",
                "copy it from Basic Information → App-Level Tokens (scope connections:write)",
            )
        return Check(MODE, Level.OK, f"Socket Mode ({APP_TOKEN} is set; no public URL needed)")
    if not secret:
        return Check(
            MODE,
            Level.FAIL,
            f"{BOT_TOKEN} is set but neither {SIGNING_SECRET} (HTTP mode) nor {APP_TOKEN} "
            "(Socket Mode)",
            f"export {SIGNING_SECRET}=... (Basic Information → Signing Secret), or "
            f"{APP_TOKEN}=xapp-... for Socket Mode",
        )
    return Check(
        MODE,
        Level.OK,
        f"HTTP mode (Events API at https://<your host>{EVENTS_PATH}; "
        "`caramba slack --port` serves it)",
    )


async def check_slack(settings: Settings) -> list[Check]:
    """The mode, and the bot token tried with Slack once it is set."""
    mode = slack_mode()
    token = os.environ.get(BOT_TOKEN, "")
    if not token:
        return [mode]
    return [mode, await check_slack_token(settings, token)]


async def check_slack_token(settings: Settings, token: str) -> Check:
    """``auth.test`` with ``token``: accepted (the workspace and the bot's name), refused
    (a failure naming the variable), or Slack not reached (a warning)."""
    url = settings.slack.api_url.rstrip("/") + "/auth.test"
    try:
        async with httpx.AsyncClient(timeout=_TIMEOUT_S) as client:
            resp = await client.post(url, headers={"Authorization": f"Bearer {token}"})
        body = resp.json() if resp.status_code == 200 else {}
    except (httpx.HTTPError, ValueError) as exc:
        return Check(
            TOKEN,
            Level.WARN,
            f"present, but {url} could not be reached: {type(exc).__name__}",
            "check the network (or slack.api_url); the bot tries again when it starts",
        )
    if resp.status_code != 200:
        return Check(
            TOKEN,
            Level.WARN,
            f"present, but Slack answered HTTP {resp.status_code} to {url}",
            "try again later; see https://slack-status.com",
        )
    if body.get("ok"):
        team = body.get("team") or body.get("team_id") or "?"
        return Check(TOKEN, Level.OK, f"accepted: the bot is {body.get('user', '?')} in {team}")
    error = str(body.get("error", "unknown"))
    if error in _BAD_TOKEN:
        return Check(
            TOKEN,
            Level.FAIL,
            f"Slack refuses {BOT_TOKEN} ({error}): the token in it is wrong or revoked",
            "copy the Bot User OAuth Token (xoxb-...) again from OAuth & Permissions",
        )
    return Check(TOKEN, Level.WARN, f"present, but auth.test answered {error}", "")
