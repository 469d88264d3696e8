"""The Bolt app: listeners that validate, acknowledge and hand the work over; each piece
of work is a translation Slack payload → one core call → Slack API calls.

A mention (or ``/caramba``: ``bots.slack.slash``) is recorded as a run in ``planning``
and its planning handed to the scheduler (a worker plans it); from then on one relay per
run follows its events (one reader for all of them, ``core.state.event_hub``) and posts
the card, the progress and the result.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine, Sequence
from typing import Any

import aiohttp
from slack_bolt.async_app import AsyncApp
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from bots.chat.background import Background
from bots.chat.intake import NotOpened, take_request
from bots.chat.ports import Place
from bots.chat.relays import Relays
from bots.chat.schedules import FiringDelivery
from bots.slack.adapter import slack_adapter, slack_assistant, slack_threads
from bots.slack.assistant import PLANNING
from bots.slack.attachments import Attachments, refusal_text
from bots.slack.context import SlackContext
from bots.slack.decisions import Decisions
from bots.slack.feedback import add_feedback_listeners
from bots.slack.form_clicks import FormButtons
from bots.slack.home import add_home_listener
from bots.slack.mentions import People, from_bot, task_text
from bots.slack.pane import add_pane_listeners
from bots.slack.schedules import add_schedule_listeners
from bots.slack.secrets import SlackSecrets
from bots.slack.slash import SlashCommand
from bots.slack.spend import SlackPlaces
from bots.slack.text import escape
from core.runs import people
from core.runs.outcomes import NotDelivered
from core.services import Services

log = logging.getLogger(__name__)
# A Web API call that takes longer fails (a relay's is tried again: bots/chat/courier.py).
API_TIMEOUT_S = 30
HELP = "Mention me with a task, e.g. “@caramba compare the three cheapest flights to Berlin”."


class SlackBot:
    """One Slack workspace's bot over ``svc``; ``app`` is the Bolt app to serve."""

    def __init__(self, svc: Services, secrets: SlackSecrets) -> None:
        self.svc = svc
        # One HTTP session for every Web API call: without it the SDK opens a session — a
        # new connection and TLS handshake — per call (measured: 700 connects for 200
        # mentions in bench/slack_ack.py).
        self.session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=API_TIMEOUT_S), trust_env=True
        )
        self.client = AsyncWebClient(
            token=secrets.bot_token,
            base_url=svc.settings.slack.api_url,
            session=self.session,
            timeout=API_TIMEOUT_S,
            # A 429 waits for Retry-After and tries again instead of failing the call.
            retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=3)],
        )
        self.app = AsyncApp(client=self.client, signing_secret=secrets.signing_secret)
        self.threads = slack_threads(svc)
        self.background = Background("slack")
        self.closed = False
        self.assistant = slack_assistant(svc, self.client)
        adapter = slack_adapter(svc, self.client, assistant=self.assistant)
        self.relays = Relays(svc, adapter, self.threads)
        # Schedules' firings posted in their channels (bots.chat.schedules).
        self.firings = FiringDelivery(self.relays)
        self.redraws = self.relays.redraws
        self.attachments = Attachments(svc, self.client)
        self.people = People(self.client)
        # Where requests are asked, with names, for the spend ledger (bots.slack.spend).
        self.places = SlackPlaces(self.client, svc)
        self.app.event("app_mention")(self._on_mention)
        self.app.event("message")(self._on_message)
        self.context = SlackContext(
            app=self.app,
            svc=svc,
            client=self.client,
            spawn=self.spawn,
            people=self.people,
            redraws=self.redraws,
        )
        self.decisions = Decisions(self.context)
        add_feedback_listeners(self.context)
        add_home_listener(self.context)
        add_pane_listeners(self.context)
        add_schedule_listeners(self.context)
        self.forms = FormButtons(self.context)
        SlashCommand(self.context, self.people, self.take_request, self.places)

    # -- background work ---------------------------------------------------------------

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` after the listener returned; errors are logged, never lost."""
        self.background.spawn(work)

    async def drain(self) -> None:
        """Wait for the listeners' work (not for the relays: they last as long as runs)."""
        await self.background.drain()

    async def start(self) -> int:
        """Take up the runs earlier bot processes left (see ``Relays.start``)."""
        taken = await self.relays.start()
        self.firings.start()
        return taken

    async def aclose(self) -> None:
        """Stop: finish the listeners' work; relays stop between two events and give
        their leases up (the next process resumes them after the last event relayed and
        delivers what their outboxes hold). Once: later calls do nothing."""
        if self.closed:
            return
        self.closed = True
        await self.firings.aclose()
        await self.redraws.aclose()
        await self.drain()
        await self.relays.aclose()
        await self.session.close()

    # -- listeners: ack fast, hand over ------------------------------------------------

    async def _on_mention(
        self, body: dict[str, Any], event: dict[str, Any], context: dict[str, Any]
    ) -> None:
        if from_bot(event, self.svc.settings.slack.allow_bots):
            log.info("ignored a mention by bot %s (not in slack.allow_bots)", event.get("bot_id"))
            return
        if await self.threads.first_time(body.get("event_id") or event["ts"]):
            self.spawn(self.handle_mention(event, context.get("bot_user_id")))

    async def _on_message(
        self, body: dict[str, Any], event: dict[str, Any], context: dict[str, Any]
    ) -> None:
        """A person's reply in a thread, with files or not (the bot's own messages and
        edits are ignored; a mention is an ``app_mention`` too, handled as a request);
        a direct message (the agent pane's too) is a request unless it replies in a
        run's thread."""
        thread = event.get("thread_ts")
        if event.get("bot_id") or event.get("subtype") not in (None, "file_share"):
            return
        if event.get("channel_type") == "im":
            if await self.threads.first_time(body.get("event_id") or event["ts"]):
                self.spawn(self.handle_direct(event, context.get("bot_user_id")))
            return
        if not thread:
            return
        if f"<@{context.get('bot_user_id')}>" in event.get("text", ""):
            return
        if await self.threads.first_time(body.get("event_id") or event["ts"]):
            self.spawn(self.handle_reply(event))

    # -- the work ----------------------------------------------------------------------

    async def acknowledge(self, channel: str, ts: str, thread: str) -> None:
        """👀 on the mention, and "is planning…" where Slack shows assistant status."""
        try:
            await self.client.reactions_add(channel=channel, timestamp=ts, name="eyes")
        except Exception:
            log.exception("could not acknowledge the mention with a reaction")
        # Only assistant threads have a status: a refusal is remembered for the thread.
        await self.assistant.show(Place(channel, thread), PLANNING)

    async def handle_mention(self, event: dict[str, Any], bot_user_id: str | None = None) -> None:
        """A mention: the task is its text without the bot's mention, people's kept as
        names; a mention with no task gets the help, and no sign that anything is being
        planned. Else 👀, and the request taken in the mention's thread."""
        channel, ts = event["channel"], event["ts"]
        thread = event.get("thread_ts") or ts
        task = await task_text(event.get("text", ""), bot_user_id, self.people)
        if not task:
            await self.client.chat_postMessage(channel=channel, thread_ts=thread, text=HELP)
            return
        self.spawn(self.acknowledge(channel, ts, thread))
        await self.take_request(
            channel=channel,
            thread=thread,
            task=task,
            user=event.get("user", ""),
            files=event.get("files") or (),
            team=event.get("team", ""),
        )

    async def handle_direct(self, event: dict[str, Any], bot_user_id: str | None) -> None:
        """A direct message: in a run's thread, a reply to it; else a request like a
        mention, its progress and result in the message's thread (the pane's thread),
        which is titled with the task."""
        channel, thread = event["channel"], event.get("thread_ts") or event["ts"]
        if event.get("thread_ts") and await self.threads.run_in(channel, thread):
            await self.handle_reply(event)
            return
        await self.handle_mention(event, bot_user_id)
        task = await task_text(event.get("text", ""), bot_user_id, self.people)
        if task:
            await self.assistant.title(Place(channel, thread), task)

    async def take_request(
        self,
        *,
        channel: str,
        thread: str,
        task: str,
        user: str,
        files: Sequence[dict[str, Any]] = (),
        team: str = "",
    ) -> None:
        """Record ``user``'s request and follow its run in ``thread``
        (``bots.chat.intake``): one path for a mention and for ``/caramba``
        (``bots.slack.slash``). Attached ``files`` go into the run's workspace before its
        planning starts; why not, if it is not taken, is said in the thread."""
        person = self.people.known(user)
        place = Place(channel=channel, thread=thread)
        fetch = (lambda run_id: self.attachments.fetch(run_id, files)) if files else None
        where = await self.places.place(team, channel, thread)  # for the spend ledger
        opened = await take_request(self.relays, task, person, place, fetch, where=where)
        if isinstance(opened, NotOpened):
            text = f":x: {escape(opened.reason)}" if opened.reason else ""
            await self._say(channel, thread, text or refusal_text(opened.files, started=False))

    async def _say(self, channel: str, thread: str, text: str) -> None:
        await self.client.chat_postMessage(channel=channel, thread_ts=thread, text=text)

    async def with_files(
        self, run_id: str, channel: str, thread: str, event: dict[str, Any]
    ) -> str:
        """The reply's text, and a list of the files attached to it once they are in the
        run's workspace (taken only while the run runs: agents read them)."""
        text, files = event.get("text", ""), event.get("files") or []
        if not files or not await people.takes_files(self.svc, run_id):
            return text
        fetched = await self.attachments.fetch(run_id, files)
        if fetched.refused:
            note = refusal_text(fetched.refused, started=True)
            await self.client.chat_postMessage(channel=channel, thread_ts=thread, text=note)
        return people.with_attached(self.svc, text, fetched.kept)

    async def handle_reply(self, event: dict[str, Any]) -> None:
        """A reply in a run's thread: the answer to an agent's open question, else a
        follow-up for the run's top agent. ✓ when delivered; else, once per person and
        run, a private hint (people also talk among themselves in threads)."""
        channel, thread, user = event["channel"], event["thread_ts"], event.get("user", "")
        run_id = await self.threads.run_in(channel, thread)
        if run_id is None:
            return
        text = await self.with_files(run_id, channel, thread, event)
        if not text.strip():
            return
        outcome = await people.reply(self.svc, run_id, text, self.people.known(user))
        if not isinstance(outcome, NotDelivered):
            await self.client.reactions_add(
                channel=channel, timestamp=event["ts"], name="white_check_mark"
            )
        elif outcome.first:
            await self.client.chat_postEphemeral(
                channel=channel, user=user, thread_ts=thread, text=escape(outcome.hint)
            )
