"""Slack's assistant thread status ("Caramba is planning…", under the thread's last
message), kept current through a run.

The status message's content is rendered with a short status beside its blocks
(:func:`assistant_status`: which agent is doing what; "" once the run ended, which clears
it), and the transport sets it with ``assistant.threads.setStatus`` each time it posts or
edits the status message: as often as that message changes (at most once per
``[slack] status_interval_s``), never more. Slack removes the status by itself when the
bot posts in the thread, or after two minutes without a message; the next edit sets it
again.

Only assistant threads have a status. The first call Slack refuses for a thread (an
``ok: false`` answer that is not its own trouble: not an assistant thread, a missing
scope, …) means it never works there: the thread is remembered in Redis
(``…:slack:assistant:off:{channel}:{thread}``) and not asked again, by any bot process.
A call that does not reach Slack is skipped: the status is a hint, never worth a retry,
and never fails the post it goes with.
"""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bots.chat.ports import Place, StatusLine
from bots.chat.store import ChatStore
from bots.slack.failures import classify
from bots.slack.names import content

log = logging.getLogger(__name__)
# How long a thread is remembered as one without a status (a run lasts far less).
OFF_TTL_S = 7 * 86_400
# The status is one short line under the thread.
STATUS_CHARS = 120
# A thread's title in the pane's history.
TITLE_CHARS = 80
PLANNING = "is planning…"


def assistant_status(s: StatusLine) -> str:
    """What the bot "is" doing now, as Slack shows it after the bot's name ("" ends it)."""
    match s.phase:
        case "starting":
            now = "is starting the agents…"
        case "running":
            tool = f" {s.tool}" if s.tool else ""
            now = f"is working: {s.who} {s.doing}{tool}…"
        case _:
            return ""
    now = content(now)  # people named, no broadcast (bots.slack.names)
    return now if len(now) <= STATUS_CHARS else now[: STATUS_CHARS - 1] + "…"


class AssistantStatus:
    """Sets the assistant status of threads with ``client``, remembering in the Slack
    chat ``store`` the threads that have none."""

    def __init__(self, client: AsyncWebClient, store: ChatStore) -> None:
        self.client, self.store = client, store

    def _key(self, place: Place) -> str:
        return self.store.keys.assistant_off(place.channel, place.thread)

    async def works(self, place: Place) -> bool:
        """Whether the thread may have a status (Slack did not refuse one there yet)."""
        return not await self.store.exists(self._key(place))

    async def show(self, place: Place, status: str) -> bool:
        """Set the thread's status to ``status`` ("" clears it); whether Slack took it.
        Never raises."""
        try:
            if not await self.works(place):
                return False
            await self.client.assistant_threads_setStatus(
                channel_id=place.channel, thread_ts=place.thread, status=status
            )
            return True
        except SlackApiError as exc:
            failure = classify(exc)
            if not failure.retry:
                log.info("no assistant status in %s (%s)", place.thread, failure.why)
                await self._off(place)
            return False
        except Exception as exc:  # unreachable, or Redis: a hint, not worth more
            log.debug("assistant status of %s skipped (%s)", place.thread, exc)
            return False

    async def title(self, place: Place, title: str) -> bool:
        """Name the thread ``title`` (what was asked) in the assistant pane's history;
        whether Slack took it. Never raises; refused like a status."""
        try:
            if not await self.works(place):
                return False
            await self.client.assistant_threads_setTitle(
                channel_id=place.channel, thread_ts=place.thread, title=title[:TITLE_CHARS]
            )
            return True
        except SlackApiError as exc:
            if not classify(exc).retry:
                await self._off(place)
            return False
        except Exception as exc:
            log.debug("title of %s skipped (%s)", place.thread, exc)
            return False

    async def _off(self, place: Place) -> None:
        try:
            await self.store.put(self._key(place), "1", OFF_TTL_S)
        except Exception:
            log.warning("could not remember that %s has no assistant status", place.thread)
