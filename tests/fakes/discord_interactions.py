"""The fake Discord's interaction endpoints: the callback (``POST /interactions/{id}/{token}
/callback``, once, within the deadline) and the interaction webhook (follow-ups, the
original response, edits and deletes), with Discord's rules:

- a second callback answers 400 code 40060, a late or unknown one 404 code 10062;
- ``?with_response=true`` (discord.py always asks) answers ``{"interaction": {...},
  "resource": {...}}``; without it, 204 (which discord.py 2.7 cannot parse);
- after a defer (5), the first follow-up *replaces* the "thinking" message and keeps the
  defer's ephemerality, whatever flags it carries;
- 6 and 7 need a message (a component's, or a modal opened from one); 9 (a modal) cannot
  answer a modal submit; the webhook works only once the interaction is acknowledged.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from tests.fakes import discord_limits as limits
from tests.fakes import discord_payloads as p

if TYPE_CHECKING:
    from tests.fakes.discord_api import FakeDiscord
    from tests.fakes.discord_records import FakeInteraction, Request

Json = dict[str, Any]
Answer = tuple[int, Any]
UNKNOWN_INTERACTION = (404, {"code": 10062, "message": "Unknown interaction"})
ALREADY_ACKED = (400, {"code": 40060, "message": "Interaction has already been acknowledged."})
UNKNOWN_WEBHOOK = (404, {"code": 10015, "message": "Unknown Webhook"})
UNKNOWN_MESSAGE = (404, {"code": 10008, "message": "Unknown Message"})


def _invalid(field: str, message: str) -> Answer:
    errors = {field: {"_errors": [{"code": "INTERACTION_RESPONSE_INVALID", "message": message}]}}
    return 400, {"code": 50035, "errors": errors, "message": "Invalid Form Body"}


def _extra(fake: FakeDiscord, inter: FakeInteraction, ephemeral: bool) -> Json:
    """What a message made by an interaction response carries besides its content."""
    user = fake.user_payload(fake.people[inter.user_id])
    metadata: Json = {
        "id": inter.id,
        "type": inter.type,
        "user": user,
        "authorizing_integration_owners": {"0": fake.guild_id},
    }
    if inter.message_id:
        metadata["interacted_message_id"] = inter.message_id
    return {
        "webhook_id": fake.app_id,
        "application_id": fake.app_id,
        "type": 20 if inter.type == 2 else 0,
        "interaction_metadata": metadata,
        "flags": p.EPHEMERAL if ephemeral else 0,
    }


async def callback(fake: FakeDiscord, rec: Request) -> Answer:
    inter = fake.interactions.get(rec.params["interaction_id"])
    if inter is None or inter.token != rec.params["token"]:
        return UNKNOWN_INTERACTION
    if inter.callback_type is not None:
        return ALREADY_ACKED
    if time.monotonic() - inter.sent_at > fake.interaction_deadline_s:
        return UNKNOWN_INTERACTION
    kind, data = int(rec.json.get("type", 0)), rec.json.get("data") or {}
    ephemeral = bool(int(data.get("flags") or 0) & p.EPHEMERAL)
    message: Json | None = None
    if kind == 4:
        problem = limits.check_message(data, len(rec.files), creating=True)
        if problem is not None:
            return 400, problem
        message = await fake.post_message(
            inter.channel_id, fake.bot, data, rec.files, **_extra(fake, inter, ephemeral)
        )
        inter.original_id = message["id"]
    elif kind == 5:
        extra = _extra(fake, inter, ephemeral)
        extra["flags"] |= p.LOADING
        message = await fake.post_message(inter.channel_id, fake.bot, {}, [], **extra)
        inter.original_id, inter.loading = message["id"], True
    elif kind in (6, 7):
        if inter.message_id is None:
            return _invalid("type", "This interaction has no message to update")
        inter.original_id = inter.message_id
        if kind == 7:
            problem = limits.check_message(data, len(rec.files), creating=False)
            if problem is not None:
                return 400, problem
            message = await fake.edit_message(fake.messages[inter.message_id], data, rec.files)
    elif kind == 9:
        if inter.type == 5:
            return _invalid("type", "A modal cannot answer a modal submit")
        problem = limits.check_modal(data)
        if problem is not None:
            return 400, problem
        fake.modals[data["custom_id"]] = (data, inter)
    else:
        return _invalid("type", f"Unsupported interaction response type {kind}")
    inter.callback_type, inter.ephemeral, inter.callback = kind, ephemeral, rec
    inter.acked_at = rec.at
    inter.acked.set()
    if rec.query.get("with_response") not in ("1", "true", "True"):
        return 204, None
    answer: Json = {
        "interaction": {
            "id": inter.id,
            "type": inter.type,
            "response_message_loading": kind == 5,
            "response_message_ephemeral": ephemeral,
        }
    }
    if inter.original_id is not None:
        answer["interaction"]["response_message_id"] = inter.original_id
    answer["resource"] = {"type": kind}
    if message is not None:
        answer["resource"]["message"] = message
    return 200, answer


def _interaction_of(fake: FakeDiscord, rec: Request) -> FakeInteraction | None:
    if rec.params.get("app_id") != fake.app_id:
        return None
    for inter in fake.interactions.values():
        if inter.token == rec.params["token"]:
            return inter
    return None


def _target(fake: FakeDiscord, inter: FakeInteraction, message_id: str) -> Json | None:
    wanted = inter.original_id if message_id == "@original" else message_id
    if wanted is None or (wanted != inter.original_id and wanted not in inter.followup_ids):
        return None
    return fake.messages.get(wanted)


async def followup(fake: FakeDiscord, rec: Request) -> Answer:
    inter = _interaction_of(fake, rec)
    if inter is None or inter.callback_type is None:
        return UNKNOWN_WEBHOOK
    data = rec.json
    problem = limits.check_message(data, len(rec.files), creating=True)
    if problem is not None:
        return 400, problem
    if inter.loading and inter.original_id is not None:
        # The first follow-up after a defer fills the "thinking" message.
        message = fake.messages[inter.original_id]
        message["flags"] &= ~p.LOADING
        inter.loading = False
        message = await fake.edit_message(message, {**data, "flags": None}, rec.files)
    else:
        ephemeral = bool(int(data.get("flags") or 0) & p.EPHEMERAL)
        extra = _extra(fake, inter, ephemeral)
        message = await fake.post_message(inter.channel_id, fake.bot, data, rec.files, **extra)
    inter.followup_ids.append(message["id"])
    if rec.query.get("wait") not in ("1", "true", "True"):
        return 204, None
    return 200, message


async def get_message(fake: FakeDiscord, rec: Request) -> Answer:
    inter = _interaction_of(fake, rec)
    if inter is None or inter.callback_type is None:
        return UNKNOWN_WEBHOOK
    message = _target(fake, inter, rec.params["message_id"])
    return (200, message) if message is not None else UNKNOWN_MESSAGE


async def edit_message(fake: FakeDiscord, rec: Request) -> Answer:
    inter = _interaction_of(fake, rec)
    if inter is None or inter.callback_type is None:
        return UNKNOWN_WEBHOOK
    message = _target(fake, inter, rec.params["message_id"])
    if message is None:
        return UNKNOWN_MESSAGE
    problem = limits.check_message(rec.json, len(rec.files), creating=False)
    if problem is not None:
        return 400, problem
    if message["id"] == inter.original_id and inter.loading:
        message["flags"] &= ~p.LOADING
        inter.loading = False
    return 200, await fake.edit_message(message, rec.json, rec.files)


async def delete_message(fake: FakeDiscord, rec: Request) -> Answer:
    inter = _interaction_of(fake, rec)
    if inter is None or inter.callback_type is None:
        return UNKNOWN_WEBHOOK
    message = _target(fake, inter, rec.params["message_id"])
    if message is None:
        return UNKNOWN_MESSAGE
    await fake.delete_message(message)
    return 204, None
