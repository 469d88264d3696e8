"""What people do on the fake Discord, as gateway events for the bot: messages and mentions
(MESSAGE_CREATE), reactions (MESSAGE_REACTION_ADD), and interactions (INTERACTION_CREATE):
button clicks and selects on a message's components, modal submits of a modal the bot
showed, slash commands the bot synced. Each refuses what a Discord user could not do."""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Iterable, Sequence
from typing import Any

from tests.fakes import discord_commands
from tests.fakes import discord_limits as limits
from tests.fakes import discord_payloads as p
from tests.fakes.discord_modals import filled as _filled
from tests.fakes.discord_records import FakeInteraction, Person, UploadedFile
from tests.fakes.discord_world import World

Json = dict[str, Any]
Files = Iterable[tuple[str, bytes] | tuple[str, bytes, str]]


class Events(World):
    # -- lookups --------------------------------------------------------------------------

    def person(self, ref: str | int | Person) -> Person:
        if isinstance(ref, Person):
            return ref
        for person in self.people.values():
            if ref == person.name or str(ref) == person.id:
                return person
        raise LookupError(f"no person {ref!r}; there are {[x.name for x in self.people.values()]}")

    def channel(self, ref: str | int | Json) -> Json:
        if isinstance(ref, dict):
            ref = ref["id"]
        found = self.channels.get(str(ref)) or next(
            (c for c in self.channels.values() if c["name"] == ref), None
        )
        if found is None:
            raise LookupError(f"no channel {ref!r}")
        return found

    def message(self, ref: str | int | Json) -> Json:
        message_id = ref["id"] if isinstance(ref, dict) else str(ref)
        if message_id not in self.messages:
            raise LookupError(f"no message {message_id}")
        return self.messages[message_id]

    def role_id(self, ref: str | int) -> str:
        for role in self.roles.values():
            if ref in (role["name"], role["id"]) or str(ref) == role["id"]:
                return str(role["id"])
        raise LookupError(f"no role {ref!r}")

    # -- the world grows --------------------------------------------------------------------

    async def add_role(self, name: str, permissions: int = p.EVERYONE_PERMISSIONS) -> str:
        role = p.role(self.snowflake(), name, len(self.roles), permissions)
        self.roles[role["id"]] = role
        await self.gateway.dispatch("GUILD_ROLE_CREATE", {"guild_id": self.guild_id, "role": role})
        return str(role["id"])

    async def add_person(
        self, name: str, *, roles: Sequence[str] = (), bot: bool = False
    ) -> Person:
        person = Person(self.snowflake(), name, bot=bot, roles=[self.role_id(r) for r in roles])
        self.people[person.id] = person
        await self.gateway.dispatch(
            "GUILD_MEMBER_ADD", {**self.member_payload(person), "guild_id": self.guild_id}
        )
        return person

    async def add_channel(self, name: str) -> Json:
        channel = p.text_channel(self.snowflake(), self.guild_id, name, len(self.channels))
        self.channels[channel["id"]] = channel
        await self.gateway.dispatch("CHANNEL_CREATE", channel)
        return channel

    # -- messages and reactions ---------------------------------------------------------------

    async def say(
        self,
        channel: str | int | Json,
        user: str | int | Person,
        text: str,
        attachments: Files = (),
    ) -> Json:
        """A person posts ``text`` (with files: (name, bytes[, content type]))."""
        uploads = [
            UploadedFile(f"files[{i}]", f[0], f[2] if len(f) > 2 else None, f[1])  # type: ignore[misc]
            for i, f in enumerate(attachments)
        ]
        return await self.post_message(
            self.channel(channel)["id"], self.person(user), {"content": text}, uploads
        )

    async def mention(
        self,
        channel: str | int | Json,
        user: str | int | Person,
        text: str,
        attachments: Files = (),
    ) -> Json:
        """``<@bot> text`` in ``channel`` by ``user``."""
        return await self.say(channel, user, f"<@{self.bot.id}> {text}", attachments)

    async def reply_in_thread(
        self, thread: str | int | Json, user: str | int | Person, text: str, attachments: Files = ()
    ) -> Json:
        if self.channel(thread)["type"] not in (p.PUBLIC_THREAD, p.PRIVATE_THREAD):
            raise LookupError(f"{thread!r} is not a thread")
        return await self.say(thread, user, text, attachments)

    async def react(self, message: str | int | Json, emoji: str, user: str | int | Person) -> None:
        await self.add_reaction(self.message(message), emoji, self.person(user))

    # -- interactions ------------------------------------------------------------------------

    async def _interact(
        self,
        kind: int,
        data: Json,
        user: str | int | Person,
        channel_id: str,
        roles: Sequence[str] | None,
        message: Json | None = None,
    ) -> FakeInteraction:
        person = self.person(user)
        role_ids = person.roles if roles is None else [self.role_id(r) for r in roles]
        member = {
            **self.member_payload(person, role_ids),
            "permissions": str(self.permissions(role_ids)),
        }
        interaction_id = self.snowflake()
        payload: Json = {
            "id": interaction_id,
            "application_id": self.app_id,
            "type": kind,
            "data": data,
            "guild_id": self.guild_id,
            "guild": {"id": self.guild_id, "locale": "en-US", "features": []},
            "channel": self.channels[channel_id],
            "channel_id": channel_id,
            "member": member,
            "token": "aW50ZXJhY3Rpb246" + secrets.token_urlsafe(48),
            "version": 1,
            "app_permissions": str(self.permissions(self.bot.roles)),
            "locale": "en-US",
            "guild_locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": {"0": self.guild_id},
            "context": 0,
            "attachment_size_limit": limits.FILE_SIZE_LIMIT,
        }
        if message is not None:
            payload["message"] = message
        inter = FakeInteraction(
            interaction_id,
            payload["token"],
            kind,
            person.id,
            channel_id,
            message["id"] if message else None,
            payload,
        )
        self.interactions[interaction_id] = inter
        inter.sent_at = time.monotonic()
        if not await self.gateway.dispatch("INTERACTION_CREATE", payload):
            raise RuntimeError("no client is connected to the fake gateway")
        return inter

    def _component(self, message: Json, custom_id: str) -> Json:
        for component in p.walk_components(message["components"]):
            if component.get("custom_id") == custom_id:
                if component.get("disabled"):
                    raise LookupError(f"component {custom_id!r} is disabled")
                return component
        ids = [
            c.get("custom_id")
            for c in p.walk_components(message["components"])
            if c.get("custom_id")
        ]
        raise LookupError(f"no component {custom_id!r} on message {message['id']}; it has {ids}")

    async def click(
        self,
        message: str | int | Json,
        custom_id: str,
        user: str | int | Person,
        *,
        roles: Sequence[str] | None = None,
    ) -> FakeInteraction:
        """``user`` clicks the button ``custom_id`` on ``message`` (``roles``: the member's
        roles in the interaction, by name or id; default: the person's)."""
        found = self.message(message)
        component = self._component(found, custom_id)
        data = {
            "custom_id": custom_id,
            "component_type": component["type"],
            "id": component.get("id"),
        }
        return await self._interact(3, data, user, found["channel_id"], roles, found)

    async def select(
        self,
        message: str | int | Json,
        custom_id: str,
        values: Sequence[str],
        user: str | int | Person,
        *,
        roles: Sequence[str] | None = None,
    ) -> FakeInteraction:
        """``user`` picks ``values`` in the select menu ``custom_id`` on ``message``."""
        found = self.message(message)
        component = self._component(found, custom_id)
        if component["type"] not in limits.SELECTS:
            raise LookupError(f"{custom_id!r} is not a select menu")
        allowed = {o["value"] for o in component.get("options", [])}
        if component["type"] == limits.STRING_SELECT and not set(values) <= allowed:
            raise ValueError(f"{values} are not all options of {custom_id!r}: {sorted(allowed)}")
        if not component.get("min_values", 1) <= len(values) <= component.get("max_values", 1):
            raise ValueError(
                f"{len(values)} values is outside min_values/max_values of {custom_id!r}"
            )
        data = {
            "custom_id": custom_id,
            "component_type": component["type"],
            "values": list(values),
            "id": component.get("id"),
        }
        return await self._interact(3, data, user, found["channel_id"], roles, found)

    async def submit_modal(
        self,
        custom_id: str,
        values: dict[str, Any],
        user: str | int | Person,
        *,
        roles: Sequence[str] | None = None,
    ) -> FakeInteraction:
        """``user`` submits the modal the bot last showed as ``custom_id``, with ``values``
        by input custom_id (inputs not given keep their default; a file upload's value: files
        as (name, bytes[, content type]))."""
        if custom_id not in self.modals:
            raise LookupError(f"modal {custom_id!r} was not shown (shown: {list(self.modals)})")
        modal, opener = self.modals.pop(custom_id)
        unknown = set(values) - {c.get("custom_id") for c in p.walk_components(modal["components"])}
        if unknown:
            raise LookupError(f"modal {custom_id!r} has no inputs {sorted(unknown)}")
        uploads = {
            c["custom_id"]
            for c in p.walk_components(modal["components"])
            if c.get("type") == limits.FILE_UPLOAD
        }
        resolved: Json = {}
        values = dict(values)
        for key in uploads & set(values):
            # Files (name, bytes[, content type]) uploaded in the form: hosted on the CDN,
            # submitted by id, their attachments in ``resolved`` as Discord sends them.
            hosted = [
                self.host_file(opener.channel_id, f[0], f[1], f[2] if len(f) > 2 else None)
                for f in values[key]
            ]
            resolved.update({a["id"]: a for a in hosted})
            values[key] = [a["id"] for a in hosted]
        ids = itertools.count(1)
        filled = [_filled(c, values, ids) for c in modal["components"]]
        data: Json = {"custom_id": custom_id, "components": filled}
        if resolved:
            data["resolved"] = {"attachments": resolved}
        message = self.messages.get(opener.message_id) if opener.message_id else None
        return await self._interact(5, data, user, opener.channel_id, roles, message)

    async def slash(
        self,
        name: str,
        options: dict[str, Any] | None,
        user: str | int | Person,
        *,
        channel: str | int = "general",
        roles: Sequence[str] | None = None,
    ) -> FakeInteraction:
        """``user`` runs ``/name`` with ``options`` in ``channel``; the command must be synced
        (guild commands first, then global), option types come from its schema."""
        data = discord_commands.invocation(self, name, options)
        return await self._interact(2, data, user, self.channel(channel)["id"], roles)
