"""Team spend in Slack: where a request was asked (:class:`SlackPlaces`: the team and
channel with their names, for the spend ledger) and the channel lines of the App Home
(:func:`home_lines`). A request over its channel's budget, asked with Approve spending /
Deny, is ``bots.slack.spend_asks``; ``/caramba budget …`` is ``bots.slack.budget_command``."""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bots.slack.text import escape
from core.runs import spend
from core.services import Services
from core.types.figures import cost
from core.types.place import Place

log = logging.getLogger(__name__)
# Channels shown in the App Home at most.
HOME_CHANNELS = 8


class SlackPlaces:
    """Slack team and channel ids → a core :class:`Place`, with the names this process
    has learned — for free from slash commands (``channel_name``, ``team_domain``), or
    looked up off the request path (the Home tab, ``/caramba budget``) — so a mention
    costs no extra Slack call. Names learned are kept in the ledger's names too: a
    report shows a channel by name even for runs recorded before it was learned. The
    workspace is the event's team, else the bot's own (``auth.test``, once)."""

    def __init__(self, client: AsyncWebClient, svc: Services) -> None:
        self.client, self.svc = client, svc
        self.own_team = ""
        self.channels: dict[str, str] = {}
        self.teams: dict[str, str] = {}

    async def place(self, team: str, channel: str, thread: str = "") -> Place:
        """``team``: the workspace's id ("" → the bot's own)."""
        team = team or await self._own_team()
        return Place(
            platform="slack",
            workspace=team or "slack",
            channel=channel,
            workspace_name=self.teams.get(team, ""),
            channel_name=self.channels.get(channel, ""),
            thread=thread,
        )

    async def learn(self, command: dict[str, Any]) -> Place:
        """The names a slash command carries, kept; the command's place."""
        channel, name = command.get("channel_id", ""), command.get("channel_name", "")
        team, domain = command.get("team_id", ""), command.get("team_domain", "")
        if name and name not in ("directmessage", "privategroup"):
            self.channels[channel] = f"#{name}"
        if domain:
            self.teams[team] = domain
        place = await self.place(team, channel)
        await self._keep(place)
        return place

    async def look_up(self, team: str, channel: str) -> Place:
        """Ask Slack for the names not known yet (off the request path); the place."""
        if channel and channel not in self.channels:
            try:
                got = await self.client.conversations_info(channel=channel)
                info = got.get("channel") or {}
                if info.get("name") and not info.get("is_im"):
                    self.channels[channel] = f"#{info['name']}"
            except Exception:
                log.info("could not name channel %s for the spend ledger", channel)
        place = await self.place(team, channel)
        await self._keep(place)
        return place

    async def _keep(self, place: Place) -> None:
        try:
            await spend.name_place(self.svc, place)
        except Exception:  # names are a nicety: a report falls back to ids
            log.exception("keeping the names of %s failed", place.key)

    async def _own_team(self) -> str:
        if not self.own_team:
            try:
                got = await self.client.auth_test()
                self.own_team = str(got.get("team_id") or "")
            except Exception:
                log.info("could not ask Slack which workspace the bot is in")
        return self.own_team


async def home_lines(svc: Services) -> list[str]:
    """The App Home's lines: this month's Slack channels, with their budgets' use."""
    made = await spend.report(svc)
    budgets = {u.budget.place_key: u for u in made.budgets}
    lines = []
    for t in [t for t in made.by_channel if t.key.startswith("slack:")][:HOME_CHANNELS]:
        use = budgets.get(t.key)
        of = f" of {cost(use.budget.month_usd)} ({use.share:.0%})" if use else ""
        lines.append(f"• *{_channel(t.key, t.name)}*: {cost(t.cost_usd)}{of}")
    for key, use in budgets.items():
        if (
            key.startswith("slack:")
            and use.budget.scope == "channel"
            and not any(t.key == key for t in made.by_channel)
        ):
            shown = _channel(key, use.budget.place_name)
            lines.append(f"• *{shown}*: $0 of {cost(use.budget.month_usd)}")
    return lines[:HOME_CHANNELS]


def _channel(key: str, name: str) -> str:
    """A channel by its name, else as Slack's own channel link (Slack shows its name)."""
    channel = key.rsplit(":", 1)[-1]
    if name and name not in (key, channel):
        return escape(name)
    return f"<#{escape(channel)}>"
