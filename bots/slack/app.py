"""The Bolt app: listeners that validate, acknowledge and hand the work to background
tasks; each task is a translation Slack payload → one core call → Slack API calls."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Coroutine
from typing import Any

from pydantic import ValidationError
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.models.blocks import ContextBlock, MarkdownTextObject
from slack_sdk.web.async_client import AsyncWebClient

from bots.slack.blocks import (
    APPROVE,
    CANCEL,
    EDIT,
    REJECT,
    fallback_text,
    outcome_blocks,
    proposal_blocks,
)
from bots.slack.edit import EDIT_VIEW, agents_of, edit_from_values, edit_view, error_block
from bots.slack.relay import relay_run
from bots.slack.secrets import SlackSecrets
from bots.slack.text import escape
from core import approval
from core.approval import (
    Approve,
    Decision,
    ProposalView,
    Reject,
    decide,
    may_decide,
    view,
)
from core.control import cancel_run, propose_run
from core.errors import CarambaError
from core.planning import plan
from core.questions import answer_question, open_questions
from core.runs import start_run
from core.runtime import Services

log = logging.getLogger(__name__)
_MENTION = re.compile(r"<@[A-Z0-9]+>")
DEDUPE_TTL_S = 3600
# How long a thread stays linked to its run (answers to agents' questions arrive there).
THREAD_TTL_S = 7 * 24 * 3600


class SlackBot:
    """One Slack workspace's bot over ``svc``; ``app`` is the Bolt app to serve."""

    def __init__(self, svc: Services, secrets: SlackSecrets) -> None:
        self.svc = svc
        self.client = AsyncWebClient(
            token=secrets.bot_token,
            base_url=svc.settings.slack.api_url,
            # A 429 waits for Retry-After and tries again instead of failing the call.
            retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=3)],
        )
        self.app = AsyncApp(
            client=self.client,
            signing_secret=secrets.signing_secret,
        )
        self.tasks: set[asyncio.Task[None]] = set()
        self.app.event("app_mention")(self._on_mention)
        self.app.event("message")(self._on_message)
        self.app.action(APPROVE)(self._on_approve)
        self.app.action(REJECT)(self._on_reject)
        self.app.action(CANCEL)(self._on_cancel)
        self.app.action(EDIT)(self._on_edit)
        self.app.view(EDIT_VIEW)(self._on_edit_submit)

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` after the listener returned; errors are logged, never lost."""

        async def guarded() -> None:
            try:
                await work
            except Exception:
                log.exception("slack background work failed")

        task = asyncio.create_task(guarded())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def drain(self) -> None:
        """Wait for the background work (tests, shutdown)."""
        while self.tasks:
            await asyncio.gather(*list(self.tasks), return_exceptions=True)

    async def first_time(self, event_id: str) -> bool:
        """True once per ``event_id``: Slack retries a slow delivery with the same id."""
        key = f"{self.svc.settings.redis.key_prefix}:slack:event:{event_id}"
        return bool(await self.svc.redis.set(key, "1", nx=True, ex=DEDUPE_TTL_S))

    def _thread_key(self, channel: str, thread: str) -> str:
        return f"{self.svc.settings.redis.key_prefix}:slack:thread:{channel}:{thread}"

    async def link_thread(self, channel: str, thread: str, run_id: str) -> None:
        await self.svc.redis.set(self._thread_key(channel, thread), run_id, ex=THREAD_TTL_S)

    # -- listeners: ack fast, hand over ------------------------------------------------

    async def _on_mention(self, body: dict[str, Any], event: dict[str, Any]) -> None:
        if not await self.first_time(body.get("event_id") or event["ts"]):
            return
        channel, ts = event["channel"], event["ts"]
        thread = event.get("thread_ts") or ts
        try:
            await self.client.reactions_add(channel=channel, timestamp=ts, name="eyes")
        except Exception:
            log.exception("could not acknowledge the mention with a reaction")
        task = _MENTION.sub("", event.get("text", "")).strip()
        self.spawn(self.handle_request(task, event.get("user", ""), channel, thread))

    async def _on_message(
        self, body: dict[str, Any], event: dict[str, Any], context: dict[str, Any]
    ) -> None:
        """A person's reply in a run's thread answers an agent's open question."""
        thread = event.get("thread_ts")
        if not thread or event.get("bot_id") or event.get("subtype"):
            return
        mention = f"<@{context.get('bot_user_id')}>"
        if mention in event.get("text", ""):
            return  # an app_mention too: handled as a request
        raw = await self.svc.redis.get(self._thread_key(event["channel"], thread))
        run_id = raw.decode() if isinstance(raw, bytes) else raw
        if run_id is None or not await self.first_time(body.get("event_id") or event["ts"]):
            return
        self.spawn(self.handle_reply(run_id, event))

    async def _on_approve(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        self.spawn(self.handle_decision(body, Approve()))

    async def _on_reject(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        self.spawn(self.handle_decision(body, Reject()))

    async def _on_edit(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """Open the form at once: Slack's trigger_id is valid for 3 s."""
        await ack()
        user, run_id = body["user"]["id"], body["actions"][0]["value"]
        run = await self.svc.store.get_run(run_id)
        refusal = may_decide(self.svc.settings, run, user)
        channel, message = body["channel"]["id"], body["message"]
        if refusal is not None:
            await self.client.chat_postEphemeral(
                channel=channel,
                user=user,
                text=escape(refusal),
                thread_ts=message.get("thread_ts") or message["ts"],
            )
            return
        meta = {"run": run_id, "channel": channel, "ts": message["ts"]}
        form = edit_view(agents_of(run), self.svc.tools.names(), meta)
        await self.client.views_open(trigger_id=body["trigger_id"], view=form)

    async def _on_edit_submit(
        self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]
    ) -> None:
        """Apply the form through core; its refusals are shown in the form."""
        meta = json.loads(view["private_metadata"])
        user = body["user"]["id"]
        agents = agents_of(await self.svc.store.get_run(meta["run"]))
        try:
            change = edit_from_values(agents, view["state"]["values"])
        except ValidationError as exc:
            problem = exc.errors()[0]["msg"]
            await ack(response_action="errors", errors={error_block(agents, ""): problem})
            return
        outcome = await decide(self.svc, meta["run"], user, change)
        if not outcome.ok:
            block = error_block(agents, outcome.message)
            await ack(response_action="errors", errors={block: outcome.message[:300]})
            return
        await ack()
        card = approval.view(self.svc.settings, outcome.run)
        self.spawn(self._edited(meta, card, user))

    async def _edited(self, meta: dict[str, str], card: ProposalView, user: str) -> None:
        blocks = proposal_blocks(card)
        note = ContextBlock(elements=[MarkdownTextObject(text=f"Edited by <@{escape(user)}>.")])
        await self.client.chat_update(
            channel=meta["channel"],
            ts=meta["ts"],
            text=fallback_text(card),
            blocks=[*blocks[:-1], note, blocks[-1]],
        )

    async def _on_cancel(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        self.spawn(self.handle_cancel(body))

    # -- the work ----------------------------------------------------------------------

    async def handle_request(self, task: str, user: str, channel: str, thread: str) -> None:
        """Plan ``task``: run the direct answer, or post the proposal card in the thread."""
        svc = self.svc
        if not task:
            await self.client.chat_postMessage(
                channel=channel,
                thread_ts=thread,
                text="Mention me with a task, e.g. "
                "“@caramba compare the three cheapest flights to Berlin”.",
            )
            return
        try:
            outcome = await plan(svc.settings, svc.llm, svc.tools, task)
        except CarambaError as exc:
            await self.client.chat_postMessage(
                channel=channel, thread_ts=thread, text=f":x: {escape(str(exc))}"
            )
            return
        if outcome.direct is not None:
            run_id = await start_run(svc, task, outcome.direct, requested_by=user)
            await self.link_thread(channel, thread, run_id)
            await relay_run(svc, self.client, run_id, channel, thread)
            return
        assert outcome.cohort is not None
        run_id = await propose_run(svc, task, outcome.cohort, requested_by=user)
        await self.link_thread(channel, thread, run_id)
        card = view(svc.settings, await svc.store.get_run(run_id))
        await self.client.chat_postMessage(
            channel=channel,
            thread_ts=thread,
            text=fallback_text(card),
            blocks=proposal_blocks(card),
        )

    async def handle_decision(self, body: dict[str, Any], decision: Decision) -> None:
        """A button click → ``core.approval.decide`` → the card updated, or a refusal."""
        svc = self.svc
        user = body["user"]["id"]
        run_id = body["actions"][0]["value"]
        channel = body["channel"]["id"]
        message = body["message"]
        thread = message.get("thread_ts") or message["ts"]
        run = await svc.store.get_run(run_id)
        refusal = may_decide(svc.settings, run, user)
        outcome = await decide(svc, run_id, user, decision) if refusal is None else None
        if outcome is None or not outcome.ok:
            text = refusal or (outcome.message if outcome else "")
            await self.client.chat_postEphemeral(
                channel=channel, user=user, thread_ts=thread, text=escape(text)
            )
            return
        verb = "Approved" if isinstance(decision, Approve) else "Rejected"
        note = f"*{verb} by <@{escape(user)}>.*"
        card = view(svc.settings, outcome.run)
        await self.client.chat_update(
            channel=channel,
            ts=message["ts"],
            text=f"{verb}: {fallback_text(card)}",
            blocks=outcome_blocks(card, note),
        )
        if isinstance(decision, Approve):
            await relay_run(svc, self.client, run_id, channel, thread)

    async def handle_cancel(self, body: dict[str, Any]) -> None:
        """Cancel → ``core.control.cancel_run`` (same people as for approving); the relay
        then shows the run as cancelled."""
        user, run_id = body["user"]["id"], body["actions"][0]["value"]
        channel, message = body["channel"]["id"], body["message"]
        run = await self.svc.store.get_run(run_id)
        reason = may_decide(self.svc.settings, run, user)
        if reason is None:
            step = await cancel_run(self.svc, run_id, user)
            reason = None if step.ok else step.reason
        if reason is not None:
            await self.client.chat_postEphemeral(
                channel=channel,
                user=user,
                thread_ts=message.get("thread_ts") or message["ts"],
                text=escape(reason),
            )

    async def handle_reply(self, run_id: str, event: dict[str, Any]) -> None:
        """Deliver a thread reply to the agent waiting for an answer; ✓ when delivered."""
        if not await open_questions(self.svc, run_id):
            return  # follow-ups to the UI agent are not built yet
        channel, user = event["channel"], event.get("user", "")
        step = await answer_question(self.svc, run_id, event.get("text", ""), by=user)
        if step.ok:
            await self.client.reactions_add(
                channel=channel, timestamp=event["ts"], name="white_check_mark"
            )
        else:
            await self.client.chat_postEphemeral(
                channel=channel, user=user, thread_ts=event["thread_ts"], text=escape(step.reason)
            )
