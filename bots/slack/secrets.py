"""The Slack secrets, read from the environment only, with errors naming the variable."""

from __future__ import annotations

import os
from dataclasses import dataclass

from core.errors import MissingSecretError


@dataclass(frozen=True)
class SlackSecrets:
    bot_token: str
    signing_secret: str
    app_token: str | None = None

    @classmethod
    def from_env(cls) -> SlackSecrets:
        """SLACK_BOT_TOKEN; SLACK_APP_TOKEN for Socket Mode, else SLACK_SIGNING_SECRET for
        HTTP mode (Slack's requests are verified with it)."""
        token = os.environ.get("SLACK_BOT_TOKEN", "")
        if not token:
            raise MissingSecretError("SLACK_BOT_TOKEN", "the Slack bot (its xoxb- token)")
        app_token = os.environ.get("SLACK_APP_TOKEN") or None
        secret = os.environ.get("SLACK_SIGNING_SECRET", "")
        if not secret and app_token is None:
            raise MissingSecretError(
                "SLACK_SIGNING_SECRET",
                "HTTP mode, to verify Slack's requests (or set SLACK_APP_TOKEN for Socket Mode)",
            )
        return cls(token, secret, app_token)
