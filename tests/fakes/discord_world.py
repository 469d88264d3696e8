"""The fake Discord's state: one guild with its roles, people, channels and threads, the
messages in them, hosted files, synced commands, interactions and the log of REST calls;
and the operations REST and the test API share (post, edit, open a thread, host a file),
each dispatching the gateway events Discord would send."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import time
from typing import Any

from tests.fakes import discord_payloads as p
from tests.fakes.discord_gateway import Gateway
from tests.fakes.discord_records import FakeInteraction, Person, Request, UploadedFile

Json = dict[str, Any]


class World:
    """Discord's side of things; ``FakeDiscord`` adds the server and the test API."""

    def __init__(self, token: str, heartbeat_interval_ms: int) -> None:
        self.token = token
        self.snowflake = p.Snowflakes()
        self.app_id = self.snowflake()
        self.guild_id = self.snowflake()
        self.base_url = ""  # http://127.0.0.1:PORT, once started
        self._secret = self.snowflake().encode()
        self._component_ids = itertools.count(1)
        everyone = p.role(self.guild_id, "@everyone", 0, p.EVERYONE_PERMISSIONS)
        bot_role = p.role(self.snowflake(), "Caramba", 1, p.EVERYONE_PERMISSIONS, managed=True)
        self.roles: dict[str, Json] = {r["id"]: r for r in (everyone, bot_role)}
        self.bot = Person(self.app_id, "caramba", bot=True, roles=[bot_role["id"]])
        self.people: dict[str, Person] = {self.bot.id: self.bot}
        self.channels: dict[str, Json] = {}
        self.messages: dict[str, Json] = {}
        self.files: dict[str, tuple[bytes, str | None]] = {}
        self.commands: dict[str | None, list[Json]] = {None: []}  # None: global
        self.interactions: dict[str, FakeInteraction] = {}
        self.modals: dict[str, tuple[Json, FakeInteraction]] = {}  # shown, by custom_id
        self.log: list[Request] = []
        self.changed = asyncio.Condition()
        self.gateway = Gateway(self, heartbeat_interval_ms)  # type: ignore[arg-type]

    # -- payloads -------------------------------------------------------------------------

    def user_payload(self, person: Person) -> Json:
        return p.user(person.id, person.name, bot=person.bot)

    def member_payload(self, person: Person, roles: list[str] | None = None) -> Json:
        return p.member(
            self.user_payload(person), person.roles if roles is None else roles, person.joined_at
        )

    def member_payloads(self) -> list[Json]:
        return [self.member_payload(person) for person in self.people.values()]

    def permissions(self, role_ids: list[str]) -> int:
        perms = int(self.roles[self.guild_id]["permissions"])
        for role_id in role_ids:
            perms |= int(self.roles[role_id]["permissions"])
        return perms

    # -- files ------------------------------------------------------------------------------

    def _signature(self, attachment_id: str, expires: str) -> str:
        return hmac.new(
            self._secret, f"{attachment_id}:{expires}".encode(), hashlib.sha256
        ).hexdigest()

    def host_file(
        self, channel_id: str, filename: str, data: bytes, content_type: str | None
    ) -> Json:
        """Keep ``data`` and return its attachment object, with a signed CDN URL on the fake
        (as Discord's CDN, the URL works only with its ``ex``/``is``/``hm`` parameters)."""
        attachment_id = self.snowflake()
        expires = format(int(time.time()) + 86400, "x")
        issued, signature = format(int(time.time()), "x"), self._signature(attachment_id, expires)
        query = f"ex={expires}&is={issued}&hm={signature}&"
        url = f"{self.base_url}/attachments/{channel_id}/{attachment_id}/{filename}?{query}"
        self.files[attachment_id] = (data, content_type)
        return p.attachment(attachment_id, filename, data, url, content_type)

    def signed(self, attachment_id: str, query: dict[str, str]) -> bool:
        expected = self._signature(attachment_id, query.get("ex", ""))
        return hmac.compare_digest(expected, query.get("hm", ""))

    # -- messages and threads ---------------------------------------------------------------

    def _attachments(
        self, channel_id: str, specs: list[Json], files: list[UploadedFile], existing: list[Json]
    ) -> list[Json]:
        """The message's attachments after a create or an edit: ``specs`` (the payload's
        ``attachments``) name existing ones to keep by id and new ones by their file index
        (``files[N]``); uploads no spec names are added too."""
        by_field = {f.field: f for f in files}
        kept = {a["id"]: a for a in existing}
        out: list[Json] = []
        used: set[str] = set()
        for spec in specs:
            spec_id = str(spec.get("id"))
            if spec_id in kept:
                out.append(kept[spec_id])
            elif (upload := by_field.get(f"files[{spec_id}]")) is not None:
                used.add(upload.field)
                name = spec.get("filename") or upload.filename
                hosted = self.host_file(channel_id, name, upload.data, upload.content_type)
                if spec.get("description"):
                    hosted["description"] = spec["description"]
                out.append(hosted)
        for upload in files:
            if upload.field not in used:
                out.append(
                    self.host_file(channel_id, upload.filename, upload.data, upload.content_type)
                )
        return out

    def _content_fields(self, data: Json) -> Json:
        fields: Json = {}
        if "content" in data:
            fields["content"] = data["content"] or ""
        if "embeds" in data:
            fields["embeds"] = [{"type": "rich", **e} for e in data["embeds"] or []]
        if "components" in data:
            fields["components"] = p.stamp_components(data["components"] or [], self._component_ids)
        return fields

    def _users(self) -> dict[str, Json]:
        return {pid: self.user_payload(person) for pid, person in self.people.items()}

    def _reply(self, body: Json, reference: Json | None) -> str | None:
        """Make ``body`` a reply (type 19, with the message it answers) when it has a
        reference; the author replied to, or None."""
        if not reference:
            return None
        ref = {k: str(v) for k, v in reference.items() if k.endswith("_id") and v is not None}
        ref = {"type": 0, "channel_id": body["channel_id"], "guild_id": self.guild_id} | ref
        body["message_reference"] = ref
        replied = self.messages.get(ref.get("message_id", ""))
        if replied is None:
            return None
        body["type"] = 19
        body["referenced_message"] = {k: v for k, v in replied.items() if k != "referenced_message"}
        return str(replied["author"]["id"])

    async def post_message(
        self, channel_id: str, author: Person, data: Json, files: list[UploadedFile], **extra: Any
    ) -> Json:
        """Create a message as Discord does (mentions resolved through allowed_mentions,
        attachments hosted); MESSAGE_CREATE unless ephemeral."""
        channel = self.channels[channel_id]
        body = p.message(self.snowflake(), channel, self.user_payload(author), "", **extra)
        body.update(self._content_fields(data))
        body["flags"] = int(data.get("flags") or 0) | int(extra.get("flags", 0))
        body["attachments"] = self._attachments(
            channel_id, data.get("attachments") or [], files, []
        )
        replied_to = self._reply(body, data.get("message_reference"))
        allowed = data.get("allowed_mentions")
        body.update(p.pings(body["content"], allowed, self._users(), replied_to))
        self.messages[body["id"]] = body
        channel["last_message_id"] = body["id"]
        if channel["type"] in (p.PUBLIC_THREAD, p.PRIVATE_THREAD):
            channel["message_count"] += 1
            channel["total_message_sent"] += 1
        if not body["flags"] & p.EPHEMERAL:
            await self.gateway.dispatch("MESSAGE_CREATE", self.with_member(body, author))
        return body

    async def edit_message(self, message: Json, data: Json, files: list[UploadedFile]) -> Json:
        """Apply an edit (content, embeds, components, flags, kept and new attachments)."""
        message.update(self._content_fields(data))
        if "flags" in data and data["flags"] is not None:
            message["flags"] = (message["flags"] & (p.EPHEMERAL | p.HAS_THREAD)) | int(
                data["flags"]
            )
        if "attachments" in data or files:
            specs = data.get("attachments") or []
            message["attachments"] = self._attachments(
                message["channel_id"], specs, files, message["attachments"]
            )
        if "content" in data or "allowed_mentions" in data:
            replied = message.get("referenced_message", {}).get("author", {}).get("id")
            allowed = data.get("allowed_mentions")
            message.update(p.pings(message["content"], allowed, self._users(), replied))
        message["edited_timestamp"] = p.iso()
        if not message["flags"] & p.EPHEMERAL:
            author = self.people[message["author"]["id"]]
            await self.gateway.dispatch("MESSAGE_UPDATE", self.with_member(message, author))
        return message

    def with_member(self, message: Json, author: Person) -> Json:
        member = self.member_payload(author)
        member.pop("user")
        return {**message, "member": member}

    async def open_thread(
        self,
        parent_id: str,
        owner: Person,
        name: str,
        message: Json | None,
        kind: int = p.PUBLIC_THREAD,
    ) -> Json:
        """A thread in ``parent_id``; from ``message`` it takes the message's id, as on
        Discord, and the message gets ``thread`` and the HAS_THREAD flag."""
        thread_id = message["id"] if message is not None else self.snowflake()
        thread = p.thread(thread_id, self.channels[parent_id], owner.id, name, kind=kind)
        self.channels[thread_id] = thread
        await self.gateway.dispatch("THREAD_CREATE", {**thread, "newly_created": True})
        if message is not None:
            message["thread"] = thread
            message["flags"] |= p.HAS_THREAD
            author = self.people[message["author"]["id"]]
            await self.gateway.dispatch("MESSAGE_UPDATE", self.with_member(message, author))
        return thread

    async def delete_message(self, message: Json) -> None:
        self.messages.pop(message["id"], None)
        if not message["flags"] & p.EPHEMERAL:
            event = {
                "id": message["id"],
                "channel_id": message["channel_id"],
                "guild_id": self.guild_id,
            }
            await self.gateway.dispatch("MESSAGE_DELETE", event)

    async def add_reaction(
        self, message: Json, emoji: str, person: Person, *, remove: bool = False
    ) -> None:
        """A reaction by ``person`` (counted on the message) and its gateway event."""
        reactions = message.setdefault("reactions", [])
        found = next((r for r in reactions if r["emoji"]["name"] == emoji), None)
        if not remove:
            if found is None:
                found = {
                    "emoji": {"id": None, "name": emoji},
                    "count": 0,
                    "me": False,
                    "burst_colors": [],
                }
                reactions.append(found)
            found["count"] += 1
            found["me"] = found["me"] or person.id == self.bot.id
        elif found is not None:
            found["count"] -= 1
            if found["count"] <= 0:
                reactions.remove(found)
        event: Json = {
            "user_id": person.id,
            "channel_id": message["channel_id"],
            "message_id": message["id"],
            "guild_id": self.guild_id,
            "emoji": {"id": None, "name": emoji, "animated": False},
            "burst": False,
            "type": 0,
        }
        if not remove:
            event |= {
                "member": self.member_payload(person),
                "message_author_id": message["author"]["id"],
                "burst_colors": [],
            }
        await self.gateway.dispatch(
            "MESSAGE_REACTION_REMOVE" if remove else "MESSAGE_REACTION_ADD", event
        )
