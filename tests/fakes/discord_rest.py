"""The fake Discord's REST routes below ``/api/v10``: one handler per route, each taking
the recorded call and returning (status, JSON body), errors in Discord's shape
(``{"code", "message"}``) and with Discord's codes (10003 unknown channel, 10008 unknown
message, 50005 not your message, 160004 thread exists, ...). Interaction routes are in
``discord_interactions``; decoding, auth, 429s and recording in ``discord_server``.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from tests.fakes import discord_commands
from tests.fakes import discord_interactions as interactions
from tests.fakes import discord_limits as limits
from tests.fakes import discord_payloads as p
from tests.fakes.discord_records import Request

if TYPE_CHECKING:
    from tests.fakes.discord_api import FakeDiscord

Json = dict[str, Any]
Answer = tuple[int, Any]
Handler = Callable[["FakeDiscord", Request], Awaitable[Answer]]
API = "/api/v10"
UNKNOWN_CHANNEL = (404, {"code": 10003, "message": "Unknown Channel"})
UNKNOWN_MESSAGE = (404, {"code": 10008, "message": "Unknown Message"})


def _channel(fake: FakeDiscord, rec: Request) -> Json | None:
    return fake.channels.get(rec.params["channel_id"])


def _message(fake: FakeDiscord, rec: Request) -> Json | None:
    message = fake.messages.get(rec.params["message_id"])
    if message is None or message["channel_id"] != rec.params["channel_id"]:
        return None
    return None if message["flags"] & p.EPHEMERAL else message


async def gateway(fake: FakeDiscord, rec: Request) -> Answer:
    url = fake.gateway_url
    if rec.path.endswith("/bot"):
        limit = {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}
        return 200, {"url": url, "shards": 1, "session_start_limit": limit}
    return 200, {"url": url}


async def me(fake: FakeDiscord, rec: Request) -> Answer:
    return 200, {**fake.user_payload(fake.bot), "verified": True, "mfa_enabled": False}


async def application(fake: FakeDiscord, rec: Request) -> Answer:
    owner = next(person for person in fake.people.values() if not person.bot)
    return 200, {
        "id": fake.app_id,
        "name": "Caramba",
        "icon": None,
        "description": "",
        "summary": "",
        "bot_public": True,
        "bot_require_code_grant": False,
        "owner": fake.user_payload(owner),
        "verify_key": "0" * 64,
        "team": None,
        "flags": 0,
        "interactions_endpoint_url": None,
        "rpc_origins": [],
        "tags": [],
        "redirect_uris": [],
    }


async def get_channel(fake: FakeDiscord, rec: Request) -> Answer:
    channel = _channel(fake, rec)
    return (200, channel) if channel is not None else UNKNOWN_CHANNEL


async def history(fake: FakeDiscord, rec: Request) -> Answer:
    if _channel(fake, rec) is None:
        return UNKNOWN_CHANNEL
    channel_id, limit = rec.params["channel_id"], int(rec.query.get("limit", 50))
    found = [
        m
        for m in fake.messages.values()
        if m["channel_id"] == channel_id and not m["flags"] & p.EPHEMERAL
    ]
    if "before" in rec.query:
        found = [m for m in found if int(m["id"]) < int(rec.query["before"])]
    if "after" in rec.query:
        found = [m for m in found if int(m["id"]) > int(rec.query["after"])]
    found.sort(key=lambda m: int(m["id"]), reverse=True)
    return 200, found[:limit]


async def create_message(fake: FakeDiscord, rec: Request) -> Answer:
    if _channel(fake, rec) is None:
        return UNKNOWN_CHANNEL
    problem = limits.check_message(rec.json, len(rec.files), creating=True)
    if problem is None:
        problem = limits.too_large([len(f.data) for f in rec.files])
        if problem is not None:
            return 413, problem
    if problem is not None:
        return 400, problem
    return 200, await fake.post_message(rec.params["channel_id"], fake.bot, rec.json, rec.files)


async def get_message(fake: FakeDiscord, rec: Request) -> Answer:
    message = _message(fake, rec)
    return (200, message) if message is not None else UNKNOWN_MESSAGE


async def edit_message(fake: FakeDiscord, rec: Request) -> Answer:
    message = _message(fake, rec)
    if message is None:
        return UNKNOWN_MESSAGE
    if message["author"]["id"] != fake.bot.id:
        return 403, {"code": 50005, "message": "Cannot edit a message authored by another user"}
    problem = limits.check_message(rec.json, len(rec.files), creating=False)
    if problem is not None:
        return 400, problem
    return 200, await fake.edit_message(message, rec.json, rec.files)


async def delete_message(fake: FakeDiscord, rec: Request) -> Answer:
    message = _message(fake, rec)
    if message is None:
        return UNKNOWN_MESSAGE
    await fake.delete_message(message)
    return 204, None


def _thread_name(rec: Request) -> Answer | None:
    if 1 <= len(rec.json.get("name") or "") <= 100:
        return None
    errors = {
        "name": {
            "_errors": [
                {"code": "BASE_TYPE_BAD_LENGTH", "message": "Must be between 1 and 100 in length."}
            ]
        }
    }
    return 400, {"code": 50035, "errors": errors, "message": "Invalid Form Body"}


async def create_thread_from_message(fake: FakeDiscord, rec: Request) -> Answer:
    channel, message = _channel(fake, rec), _message(fake, rec)
    if channel is None or message is None:
        return UNKNOWN_MESSAGE
    if channel["type"] != p.GUILD_TEXT:
        return 400, {"code": 50024, "message": "Cannot execute action on this channel type"}
    if "thread" in message:
        return 400, {
            "code": 160004,
            "message": "A thread has already been created for this message",
        }
    if (bad := _thread_name(rec)) is not None:
        return bad
    return 201, await fake.open_thread(channel["id"], fake.bot, rec.json["name"], message)


async def create_thread(fake: FakeDiscord, rec: Request) -> Answer:
    channel = _channel(fake, rec)
    if channel is None:
        return UNKNOWN_CHANNEL
    if (bad := _thread_name(rec)) is not None:
        return bad
    kind = int(rec.json.get("type") or p.PRIVATE_THREAD)
    return 201, await fake.open_thread(channel["id"], fake.bot, rec.json["name"], None, kind)


async def no_content(fake: FakeDiscord, rec: Request) -> Answer:
    """Typing, joining a thread: nothing to change here."""
    return (204, None) if _channel(fake, rec) is not None else UNKNOWN_CHANNEL


async def reaction(fake: FakeDiscord, rec: Request) -> Answer:
    message = _message(fake, rec)
    if message is None:
        return UNKNOWN_MESSAGE
    emoji = urllib.parse.unquote(rec.params["emoji"])
    await fake.add_reaction(message, emoji, fake.bot, remove=rec.method == "DELETE")
    return 204, None


async def get_member(fake: FakeDiscord, rec: Request) -> Answer:
    person = fake.people.get(rec.params["user_id"])
    if person is None or rec.params["guild_id"] != fake.guild_id:
        return 404, {"code": 10007, "message": "Unknown Member"}
    return 200, fake.member_payload(person)


async def get_roles(fake: FakeDiscord, rec: Request) -> Answer:
    return 200, list(fake.roles.values())


async def commands(fake: FakeDiscord, rec: Request) -> Answer:
    """GET lists, PUT replaces (bulk overwrite) the global or the guild's commands."""
    guild_id = rec.params.get("guild_id")
    if rec.params["app_id"] != fake.app_id or guild_id not in (None, fake.guild_id):
        return 403, {"code": 50001, "message": "Missing Access"}
    if rec.method == "GET":
        return 200, fake.commands.get(guild_id, [])
    problem = discord_commands.overwrite(
        fake, guild_id, rec.body if isinstance(rec.body, list) else []
    )
    return (400, problem) if problem is not None else (200, fake.commands[guild_id])


async def unknown(fake: FakeDiscord, rec: Request) -> Answer:
    return 404, {"code": 0, "message": "404: Not Found"}


ROUTES: list[tuple[str, str, str, Handler]] = [
    ("GET", "/gateway", "gateway", gateway),
    ("GET", "/gateway/bot", "gateway_bot", gateway),
    ("GET", "/users/@me", "me", me),
    ("GET", "/oauth2/applications/@me", "application", application),
    ("GET", "/applications/@me", "application", application),
    ("GET", "/channels/{channel_id}", "get_channel", get_channel),
    ("GET", "/channels/{channel_id}/messages", "history", history),
    ("POST", "/channels/{channel_id}/messages", "create_message", create_message),
    ("GET", "/channels/{channel_id}/messages/{message_id}", "get_message", get_message),
    ("PATCH", "/channels/{channel_id}/messages/{message_id}", "edit_message", edit_message),
    ("DELETE", "/channels/{channel_id}/messages/{message_id}", "delete_message", delete_message),
    (
        "POST",
        "/channels/{channel_id}/messages/{message_id}/threads",
        "create_thread_from_message",
        create_thread_from_message,
    ),
    ("POST", "/channels/{channel_id}/threads", "create_thread", create_thread),
    ("PUT", "/channels/{channel_id}/thread-members/@me", "join_thread", no_content),
    ("POST", "/channels/{channel_id}/typing", "typing", no_content),
    (
        "PUT",
        "/channels/{channel_id}/messages/{message_id}/reactions/{emoji}/@me",
        "add_reaction",
        reaction,
    ),
    (
        "DELETE",
        "/channels/{channel_id}/messages/{message_id}/reactions/{emoji}/@me",
        "remove_reaction",
        reaction,
    ),
    ("GET", "/guilds/{guild_id}/members/{user_id}", "get_member", get_member),
    ("GET", "/guilds/{guild_id}/roles", "get_roles", get_roles),
    ("GET", "/applications/{app_id}/commands", "global_commands", commands),
    ("PUT", "/applications/{app_id}/commands", "sync_global_commands", commands),
    ("GET", "/applications/{app_id}/guilds/{guild_id}/commands", "guild_commands", commands),
    ("PUT", "/applications/{app_id}/guilds/{guild_id}/commands", "sync_guild_commands", commands),
    (
        "POST",
        "/interactions/{interaction_id}/{token}/callback",
        "interaction_callback",
        interactions.callback,
    ),
    ("POST", "/webhooks/{app_id}/{token}", "followup", interactions.followup),
    (
        "GET",
        "/webhooks/{app_id}/{token}/messages/{message_id}",
        "get_webhook_message",
        interactions.get_message,
    ),
    (
        "PATCH",
        "/webhooks/{app_id}/{token}/messages/{message_id}",
        "edit_webhook_message",
        interactions.edit_message,
    ),
    (
        "DELETE",
        "/webhooks/{app_id}/{token}/messages/{message_id}",
        "delete_webhook_message",
        interactions.delete_message,
    ),
]
