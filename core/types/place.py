"""Where a request was made: the platform, the workspace (a Slack team, a Discord guild,
``web``, ``console``) and the channel, with the names people read. Schedules post into
a place; the spend ledger attributes every model call's cost to the place of its run.

Ids are what the platform knows (``T0ACME``, a guild snowflake, ``C0OPS``); names are
what people read (``Acme``, ``#ops``). An adapter that cannot name one passes the id."""

from __future__ import annotations

from core.types._base import Frozen


class Place(Frozen):
    """A channel somewhere. ``platform``: ``slack``, ``discord``, ``web`` or ``console``;
    ``workspace``: the team/guild id (``web``/``console`` for those); ``channel``: the
    channel id (a DM's id for a direct message); ``thread``: the thread the request was
    made in, if any (a Slack ``thread_ts``, a Discord thread id)."""

    platform: str
    workspace: str
    channel: str
    workspace_name: str = ""
    channel_name: str = ""
    thread: str = ""

    @property
    def key(self) -> str:
        """One string for the channel, the same on every call: ``slack:T0ACME:C0OPS``."""
        return f"{self.platform}:{self.workspace}:{self.channel}"

    @property
    def team_key(self) -> str:
        """One string for the workspace or guild: ``slack:T0ACME``."""
        return f"{self.platform}:{self.workspace}"

    def shown(self) -> str:
        """How people read it: ``#ops`` (Acme)."""
        channel = self.channel_name or self.channel
        return f"{channel} ({self.workspace_name})" if self.workspace_name else channel


__all__ = ["Place"]
