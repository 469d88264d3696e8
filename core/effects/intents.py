"""Intents: side effects a tool asks for during a turn, processed exactly once after it.

During a turn, tools stage intents on their context (``ToolContext.intents``), like
every other effect of the turn. They are written to the ``{prefix}:intents``
stream in the turn's save transaction, so an intent exists if and only if its turn was
saved. After the save, and from every process's background loop, pending intents are read
through one consumer group and handed to their processor; entries a dead worker had
claimed are taken over after ``scheduler.intent_claim_idle_s``.

Each intent has a key unique per run/agent/turn/index. An intent whose done-marker exists
is skipped, and a processor's Redis effects (its events) are written in one transaction
with the marker and the acknowledgement, so they happen exactly once. A processor with an
effect outside Redis receives the key to deduplicate on the far side.
"""

from __future__ import annotations

import logging
import os
import socket
import time

from core.effects import timers
from core.services import IntentProcessor, Services
from core.state.intents import GROUP
from core.state.store import PipelineWrite
from core.types.events import ChatPosted, ErrorRaised, Notified, RunEvent
from core.types.intents import INTENT, Intent, Notify, PostToChat, Remind

log = logging.getLogger(__name__)

__all__ = ["GROUP", "default_processors", "keyed", "process_pending", "save_write"]

_CONSUMER = f"{socket.gethostname()}-{os.getpid()}"
_BATCH = 100
_MAX_FAILURES = 5


def keyed(intents: list[Intent], run_id: str, agent_id: str, seq: int) -> list[Intent]:
    """The turn's intents with their idempotency keys."""
    return [
        i.model_copy(update={"key": f"{run_id}:{agent_id}:{seq}:{n}"})
        for n, i in enumerate(intents)
    ]


def save_write(svc: Services, intents: list[Intent]) -> PipelineWrite:
    """The command (for the turn's save transaction) that records the turn's intents."""
    return svc.store.intents.save_write(intents)


async def _post(svc: Services, intent: Intent) -> list[RunEvent]:
    assert isinstance(intent, PostToChat)
    return [
        ChatPosted(
            run_id=intent.run_id,
            agent_id=intent.agent_id,
            text=intent.text,
            filename=intent.filename,
            key=intent.key,
        )
    ]


async def _notify(svc: Services, intent: Intent) -> list[RunEvent]:
    assert isinstance(intent, Notify)
    return [
        Notified(
            run_id=intent.run_id,
            agent_id=intent.agent_id,
            who=intent.who,
            text=intent.text,
            key=intent.key,
        )
    ]


async def _remind(svc: Services, intent: Intent) -> list[RunEvent]:
    assert isinstance(intent, Remind)
    # The timer's id is the intent's key, so a repeated schedule replaces, not duplicates.
    timer = timers.DeliverMessage(
        id=intent.key,
        run_id=intent.run_id,
        agent_id=intent.agent_id,
        body=f"Reminder you set: {intent.text}",
        author="reminder",
    )
    await timers.schedule(svc, timer, time.time() + intent.after_s)
    return []


def default_processors() -> dict[str, IntentProcessor]:
    """Post and notify become run events (the chat adapters relay them); remind is a timer."""
    return {"post_to_chat": _post, "notify": _notify, "remind": _remind}


async def process_pending(svc: Services) -> int:
    """Process new intents and those a dead worker left claimed; returns how many ran."""
    queue = svc.store.intents
    idle_ms = int(svc.settings.scheduler.intent_claim_idle_s * 1000)
    done = 0
    for entry_id, fields in await queue.take(_CONSUMER, idle_ms, _BATCH):
        if fields and await _process_one(svc, entry_id, INTENT.validate_json(fields["i"])):
            done += 1
        elif not fields:  # trimmed or deleted meanwhile
            await queue.ack(entry_id)
    return done


async def _process_one(svc: Services, entry_id: str, intent: Intent) -> bool:
    queue = svc.store.intents
    if await queue.is_done(intent.key):
        await queue.ack(entry_id)
        return False
    processor = svc.intent_processors.get(intent.kind)
    events: list[RunEvent]
    if processor is None:
        events = [
            ErrorRaised(
                run_id=intent.run_id,
                agent_id=intent.agent_id,
                message=f"no processor for intent kind {intent.kind!r}; it was dropped",
                hint="register one in Services.intent_processors",
            )
        ]
    else:
        try:
            events = await processor(svc, intent)
        except Exception as exc:
            failures = await queue.count_failure(intent.key)
            log.exception("intent %s failed (%d)", intent.key, failures)
            if failures < _MAX_FAILURES:
                return False  # stays pending; retried after intent_claim_idle_s
            events = [
                ErrorRaised(
                    run_id=intent.run_id,
                    agent_id=intent.agent_id,
                    message=f"{intent.kind} failed {failures} times and was given up: {exc}",
                    hint="see the worker logs",
                )
            ]
    if not await queue.finish(entry_id, intent.key, intent.run_id, events):
        return False
    return processor is not None
