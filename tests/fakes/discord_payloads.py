"""Discord API v10 objects as the fake Discord sends them (users, members, roles, channels,
threads, messages, attachments), complete enough for discord.py 2.7 to build its models.

Every id is a snowflake string, every timestamp ISO 8601 with an offset, as Discord sends.
"""

from __future__ import annotations

import datetime
import itertools
import re
import time
from typing import Any

Json = dict[str, Any]
DISCORD_EPOCH_MS = 1420070400000

# Permission bits (https://discord.com/developers/docs/topics/permissions).
ADD_REACTIONS = 1 << 6
VIEW_CHANNEL = 1 << 10
SEND_MESSAGES = 1 << 11
EMBED_LINKS = 1 << 14
ATTACH_FILES = 1 << 15
READ_MESSAGE_HISTORY = 1 << 16
USE_APPLICATION_COMMANDS = 1 << 31
CREATE_PUBLIC_THREADS = 1 << 35
SEND_MESSAGES_IN_THREADS = 1 << 38
EVERYONE_PERMISSIONS = (
    ADD_REACTIONS
    | VIEW_CHANNEL
    | SEND_MESSAGES
    | EMBED_LINKS
    | ATTACH_FILES
    | READ_MESSAGE_HISTORY
    | USE_APPLICATION_COMMANDS
    | CREATE_PUBLIC_THREADS
    | SEND_MESSAGES_IN_THREADS
)

# Channel types and message flags used here.
GUILD_TEXT, PUBLIC_THREAD, PRIVATE_THREAD = 0, 11, 12
HAS_THREAD, EPHEMERAL, LOADING = 1 << 5, 1 << 6, 1 << 7


class Snowflakes:
    """Increasing snowflakes made from the clock, like Discord's (timestamp << 22 | seq)."""

    def __init__(self) -> None:
        self._last = 0
        self._seq = itertools.count()

    def __call__(self) -> str:
        now = (int(time.time() * 1000) - DISCORD_EPOCH_MS) << 22
        self._last = max(now | (next(self._seq) & 0xFFF), self._last + 1)
        return str(self._last)


def iso(at: float | None = None) -> str:
    when = datetime.datetime.fromtimestamp(time.time() if at is None else at, datetime.UTC)
    return when.isoformat()


def user(user_id: str, name: str, *, bot: bool = False) -> Json:
    return {
        "id": user_id,
        "username": name,
        "discriminator": "0",
        "global_name": None if bot else name.title(),
        "avatar": None,
        "banner": None,
        "accent_color": None,
        "avatar_decoration_data": None,
        "bot": bot,
        "system": False,
        "public_flags": 0,
        "flags": 0,
    }


def member(user_payload: Json, roles: list[str], joined_at: str) -> Json:
    """A guild member with its user (GUILD_CREATE, interactions, fetch_member)."""
    return {
        "user": user_payload,
        "nick": None,
        "avatar": None,
        "banner": None,
        "roles": list(roles),
        "joined_at": joined_at,
        "premium_since": None,
        "deaf": False,
        "mute": False,
        # discord.py reads data['flags'] unconditionally: a member without it crashes it.
        "flags": 0,
        "pending": False,
        "communication_disabled_until": None,
    }


def role(
    role_id: str, name: str, position: int, permissions: int, *, managed: bool = False
) -> Json:
    return {
        "id": role_id,
        "name": name,
        "color": 0,
        "colors": {"primary_color": 0, "secondary_color": None, "tertiary_color": None},
        "hoist": False,
        "icon": None,
        "unicode_emoji": None,
        "position": position,
        "permissions": str(permissions),
        "managed": managed,
        "mentionable": False,
        "flags": 0,
    }


def text_channel(channel_id: str, guild_id: str, name: str, position: int) -> Json:
    return {
        "id": channel_id,
        "type": GUILD_TEXT,
        "guild_id": guild_id,
        "name": name,
        "position": position,
        "permission_overwrites": [],
        "topic": None,
        "nsfw": False,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "parent_id": None,
        "default_auto_archive_duration": 1440,
        "flags": 0,
    }


def thread(
    thread_id: str, parent: Json, owner_id: str, name: str, *, kind: int = PUBLIC_THREAD
) -> Json:
    now = iso()
    return {
        "id": thread_id,
        "type": kind,
        "guild_id": parent["guild_id"],
        "parent_id": parent["id"],
        "owner_id": owner_id,
        "name": name,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "message_count": 0,
        "member_count": 1,
        "total_message_sent": 0,
        "flags": 0,
        "applied_tags": [],
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 1440,
            "archive_timestamp": now,
            "locked": False,
            "create_timestamp": now,
        },
    }


def attachment(
    attachment_id: str, filename: str, data: bytes, url: str, content_type: str | None
) -> Json:
    return {
        "id": attachment_id,
        "filename": filename,
        "size": len(data),
        "url": url,
        "proxy_url": url,
        "content_type": content_type,
        "flags": 0,
    }


def message(message_id: str, channel: Json, author: Json, content: str, **extra: Any) -> Json:
    """A message as REST answers and MESSAGE_CREATE carries it (``member`` added by the
    gateway for guild messages)."""
    body: Json = {
        "id": message_id,
        "channel_id": channel["id"],
        "guild_id": channel.get("guild_id"),
        "author": author,
        "content": content,
        "timestamp": iso(),
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": [],
        "mention_roles": [],
        "attachments": [],
        "embeds": [],
        "components": [],
        "reactions": [],
        "pinned": False,
        "type": 0,
        "flags": 0,
    }
    body.update(extra)
    return body


_USER_MENTION = re.compile(r"<@!?(\d+)>")
_ROLE_MENTION = re.compile(r"<@&(\d+)>")


def pings(
    content: str, allowed: Json | None, users: dict[str, Json], replied_to: str | None
) -> Json:
    """Who a message really pings, as Discord resolves it: ``mention_everyone``,
    ``mentions`` (users; the author replied to unless ``replied_user`` is false) and
    ``mention_roles``, filtered by ``allowed_mentions`` (absent: all the text's mentions)."""
    parse = {"everyone", "users", "roles"} if allowed is None else set(allowed.get("parse", []))
    listed_users = {str(u) for u in (allowed or {}).get("users", [])}
    listed_roles = {str(r) for r in (allowed or {}).get("roles", [])}
    everyone = "everyone" in parse and ("@everyone" in content or "@here" in content)
    user_ids = [u for u in _USER_MENTION.findall(content) if "users" in parse or u in listed_users]
    role_ids = [r for r in _ROLE_MENTION.findall(content) if "roles" in parse or r in listed_roles]
    if replied_to is not None and (allowed is None or allowed.get("replied_user", False)):
        user_ids.append(replied_to)
    return {
        "mention_everyone": everyone,
        "mentions": [users[u] for u in dict.fromkeys(user_ids) if u in users],
        "mention_roles": list(dict.fromkeys(role_ids)),
    }


def stamp_components(components: list[Json], ids: itertools.count[int]) -> list[Json]:
    """Components as Discord echoes them: each with a numeric ``id`` when it had none."""
    out = []
    for component in components:
        copy = dict(component)
        copy.setdefault("id", next(ids))
        if "components" in copy:
            copy["components"] = stamp_components(copy["components"], ids)
        for one in ("component", "accessory"):
            if isinstance(copy.get(one), dict):
                copy[one] = stamp_components([copy[one]], ids)[0]
        out.append(copy)
    return out


def walk_components(components: list[Json]) -> list[Json]:
    """Every component, nested ones included (action rows, labels, containers, a
    section's accessory)."""
    found: list[Json] = []
    for component in components:
        found.append(component)
        found.extend(walk_components(component.get("components", [])))
        for one in ("component", "accessory"):
            if isinstance(component.get(one), dict):
                found.extend(walk_components([component[one]]))
    return found
