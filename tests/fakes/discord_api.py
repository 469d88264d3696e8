"""A local Discord for tests: REST API, gateway and attachment CDN on one aiohttp server on
127.0.0.1, for a real discord.py 2.7 client.

Use::

    async with FakeDiscord.serving() as fake:              # started, discord.py pointed at it
        bot = commands.Bot(..., guild_ready_timeout=0.05)   # else on_ready waits 2 s
        async with fake.running(bot):                       # connected and ready
            await fake.mention("general", "alice", "plan a trip", attachments=[("a.csv", b"")])
            card = await fake.wait_for("create_message")    # the recorded REST call
            inter = await fake.click(card.answer, "caramba:approve", "bob", roles=["approver"])
            await fake.wait_ack(inter)                      # its callback (type 4/5/6/7/9)

``serving`` sets ``discord.http.Route.BASE`` (REST *and* interaction webhooks) and
``discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY`` (``Client`` connects there and falls
back there after INVALID_SESSION; only ``AutoShardedClient`` reads ``GET /gateway/bot``;
resumes go to READY's ``resume_gateway_url``, ``/resume/`` here), restoring both on exit.

The world: guild "Caramba Test", channels ``general`` and ``random``, roles ``@everyone``,
``Caramba`` (the bot's) and ``approver``; people ``alice``, ``bob`` (approver), ``carol``
and the bot ``robot``; the bot user ``caramba``, whose id is the application id. Name
people, channels and roles by name or id, messages by id or payload; ``add_person`` /
``add_channel`` / ``add_role`` add more. People act with ``say``, ``mention``,
``reply_in_thread``, ``react``, ``click``, ``select``, ``submit_modal``, ``slash``.
Read back: ``log`` / ``requests(route)`` / ``wait_for`` / ``wait_until`` (every ``Request``
with its decoded JSON or ``payload_json``, file bytes, status, answer and arrival time),
``wait_ack`` and ``FakeInteraction`` (callback type, ``ack_ms``, original and follow-ups),
``channel_messages``, ``thread_of``, ``pinged``, ``unguarded_mentions``, ``file_bytes``.
Modules: gateway, rest (+ interactions, commands), server (decoding, auth, 429s), world
(state), events (people's actions), limits, ratelimits, payloads, records.

Faithful (read in discord.py 2.7.1's code and Discord's documentation):
- gateway v10: HELLO → IDENTIFY (bad token: close 4004) → READY + GUILD_CREATE (members
  carry ``flags``; only the bot without GUILD_MEMBERS), heartbeat ACKs, sequence numbers,
  RESUME with the missed events replayed (``disconnect()``), op 7 (``reconnect()``);
- events filtered by intents: MESSAGE_* need GUILD_MESSAGES, reactions
  GUILD_MESSAGE_REACTIONS (``guild_reactions``, not part of ``guild_messages``), threads and
  roles GUILDS; without MESSAGE_CONTENT a message arrives with empty content, embeds,
  attachments and components unless it mentions the bot or is the bot's;
- the bot's own messages come back as MESSAGE_CREATE, edits as MESSAGE_UPDATE, threads as
  THREAD_CREATE (a thread opened from a message has the message's id); ephemeral messages
  are never dispatched; replies are type 19 with the message they answer;
- pings resolved from ``allowed_mentions`` as Discord does (absent: every mention in the
  text, and the replied-to author);
- refusals with Discord's codes: content > 2,000, embeds (4,096 description, 25 fields,
  1,024 a value, 6,000 in all), > 5 rows, > 5 buttons or > 1 select a row, custom_id > 100
  or repeated, modals (≤ 5 rows, title ≤ 45), > 10 files or > 10 MiB, empty (50006);
- interactions: one callback, within ``interaction_deadline_s`` (3 s): late → 404 10062,
  twice → 400 40060; follow-ups only after it; the first follow-up after a defer fills
  the "thinking" message (keeping the defer's ephemerality); ``@original`` of a component
  interaction is its message; only existing, enabled components can be clicked, only
  shown modals submitted (required inputs, lengths), only synced commands run;
- attachments at signed CDN URLs on the fake (unsigned: 404); uploads kept with bytes;
- 429s injected (``rate_limit``) or, with ``message_limit=(5, 5.0)``, per-channel buckets
  for message creates and edits with ``X-RateLimit-*`` headers (discord.py then waits
  before it overflows).

Not faithful: permissions are not enforced (interactions carry ``permissions`` computed
from roles); one guild, no DMs, voice or presences; text frames only (discord.py asks for
zlib-stream but reads text frames too); no sub-commands, autocomplete, context menus or
``resolved`` option data; threads never archive; no global 50/s limit.

discord.py quirks met here: a REST answer whose ``Content-Type`` is not exactly
``application/json`` is returned as ``str``; a 429 without ``Via`` raises instead of
waiting; the interaction callback must answer JSON ``{"interaction": {...}}`` (it sends
``?with_response=true``); ``import discord`` warns (audioop) — pyproject ignores it; the
``WebhookMessage`` from ``followup.send(wait=True)`` has ``guild=None``, so its
``create_thread`` raises: use ``interaction.original_response()``; ``Client.close()``
sends close code 4000, not 1000 (its poll loop closes first; aiohttp 3.14), so the session
stays resumable; ``Member.roles`` includes ``@everyone``; ``on_ready`` comes
``guild_ready_timeout`` (2 s) after the last GUILD_CREATE.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from aiohttp import web

from tests.fakes import discord_payloads as p
from tests.fakes.discord_events import Events
from tests.fakes.discord_ratelimits import Injected, Limiter
from tests.fakes.discord_records import FakeInteraction, Person, Request
from tests.fakes.discord_server import build_app

Json = dict[str, Any]
TOKEN = "fake-discord-bot-token"
MESSAGE_ROUTES = ("create_message", "edit_message", "followup", "edit_webhook_message")


class FakeDiscord(Events):
    """The fake (state in ``World``, test-side events in ``Events``); see the module doc."""

    def __init__(
        self,
        *,
        token: str = TOKEN,
        interaction_deadline_s: float = 3.0,
        heartbeat_interval_ms: int = 41250,
        message_limit: tuple[int, float] | None = None,
    ) -> None:
        super().__init__(token, heartbeat_interval_ms)
        self.interaction_deadline_s = interaction_deadline_s
        self.limiter = Limiter(message_limit=message_limit)
        # Routes answered 403 Missing Permissions (a bot not allowed to, e.g. open threads).
        self.forbidden: set[str] = set()
        self.port = 0
        self._runner: web.AppRunner | None = None
        self._setup_world()

    def _setup_world(self) -> None:
        for position, name in enumerate(("general", "random")):
            channel_id = self.snowflake()
            self.channels[channel_id] = p.text_channel(channel_id, self.guild_id, name, position)
        approver = self.snowflake()
        self.roles[approver] = p.role(approver, "approver", 2, p.EVERYONE_PERMISSIONS)
        for name, roles, bot in (
            ("alice", [], False),
            ("bob", [approver], False),
            ("carol", [], False),
            ("robot", [], True),
        ):
            person = Person(self.snowflake(), name, bot=bot, roles=roles)
            self.people[person.id] = person

    # -- server ---------------------------------------------------------------------------

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"

    async def start(self) -> FakeDiscord:
        self._runner = web.AppRunner(build_app(self), shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{self.port}"
        return self

    async def stop(self) -> None:
        await self.gateway.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @contextlib.contextmanager
    def patched(self) -> Iterator[FakeDiscord]:
        """Point discord.py at this fake (REST, webhooks, gateway); restore on exit."""
        import yarl
        from discord.gateway import DiscordWebSocket
        from discord.http import Route

        saved = (Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY)
        Route.BASE = self.api_url
        DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(self.gateway_url)
        try:
            yield self
        finally:
            Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY = saved

    @classmethod
    @contextlib.asynccontextmanager
    async def serving(cls, **options: Any) -> AsyncIterator[FakeDiscord]:
        """A started fake with discord.py pointed at it; stopped and unpatched after."""
        fake = await cls(**options).start()
        try:
            with fake.patched():
                yield fake
        finally:
            await fake.stop()

    @contextlib.asynccontextmanager
    async def running(self, client: Any, *, timeout_s: float = 10.0) -> AsyncIterator[Any]:
        """``client.start(token)`` until it is ready (its error raised if it dies first);
        closed after."""
        task = asyncio.create_task(client.start(self.token))
        deadline = time.monotonic() + timeout_s
        while not client.is_ready():
            if task.done():
                task.result()
                raise RuntimeError("the client stopped before it was ready")
            if time.monotonic() > deadline:
                await client.close()
                task.cancel()
                raise TimeoutError(f"client not ready after {timeout_s} s")
            await asyncio.sleep(0.01)
        try:
            yield client
        finally:
            await client.close()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def disconnect(self, code: int = 4000) -> None:
        """Drop every gateway connection (the client resumes and gets missed events)."""
        await self.gateway.disconnect(code)

    async def reconnect(self) -> None:
        await self.gateway.reconnect()

    # -- the REST log ---------------------------------------------------------------------

    async def record(self, rec: Request) -> None:
        self.log.append(rec)
        async with self.changed:
            self.changed.notify_all()

    def rate_limit(
        self,
        route: str,
        times: int = 1,
        retry_after: float = 0.2,
        *,
        is_global: bool = False,
        where: Callable[[Request], bool] | None = None,
    ) -> None:
        """Answer the next ``times`` calls of ``route`` (matching ``where``) with 429."""
        self.limiter.injected.append(Injected(route, times, retry_after, is_global, where))

    def forbid(self, route: str) -> None:
        """Answer every call of ``route`` with 403 Missing Permissions (50013)."""
        self.forbidden.add(route)

    def requests(
        self, route: str | None = None, where: Callable[[Request], bool] | None = None
    ) -> list[Request]:
        """Recorded calls (all, or of one route), in arrival order of their answers."""
        return [
            r
            for r in self.log
            if (route is None or r.route == route) and (where is None or where(r))
        ]

    async def wait_until(self, predicate: Callable[[], bool], timeout_s: float = 5.0) -> None:
        """Wait until ``predicate()`` holds: checked after each REST call and every 20 ms
        (for what the client does after an answer)."""
        deadline = time.monotonic() + timeout_s
        async with self.changed:
            while not predicate():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    seen = ", ".join(f"{r.method} {r.path} {r.status}" for r in self.log[-15:])
                    raise AssertionError(f"timed out after {timeout_s} s; last calls: {seen}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), min(remaining, 0.02))

    async def wait_for(
        self,
        route: str,
        where: Callable[[Request], bool] | None = None,
        *,
        count: int = 1,
        timeout_s: float = 5.0,
    ) -> Request:
        """The ``count``-th recorded call of ``route`` (matching ``where``), once it came."""
        await self.wait_until(lambda: len(self.requests(route, where)) >= count, timeout_s)
        return self.requests(route, where)[count - 1]

    async def wait_ack(self, interaction: FakeInteraction, timeout_s: float = 5.0) -> Request:
        """The interaction's callback (raises if the bot never answered it)."""
        await self.wait_until(lambda: interaction.callback is not None, timeout_s)
        assert interaction.callback is not None
        return interaction.callback

    # -- what the channels hold -------------------------------------------------------------

    def channel_messages(self, channel: str | int, *, ephemeral: bool = False) -> list[Json]:
        channel_id = self.channel(channel)["id"]
        found = [m for m in self.messages.values() if m["channel_id"] == channel_id]
        return [m for m in found if ephemeral or not m["flags"] & p.EPHEMERAL]

    def thread_of(self, message: Json | str | int) -> Json | None:
        """The thread opened from ``message``, if any."""
        return (
            self.channels.get(self.message(message)["id"])
            if self.message(message).get("thread")
            else None
        )

    def pinged(self) -> list[Json]:
        """Messages by the bot that ping someone (@everyone/@here, a user or a role)."""
        mine = [m for m in self.messages.values() if m["author"]["id"] == self.bot.id]
        return [m for m in mine if m["mention_everyone"] or m["mentions"] or m["mention_roles"]]

    def unguarded_mentions(self) -> list[Request]:
        """Calls that sent text without ``allowed_mentions`` that ping nobody (``parse``
        empty, no ``users``/``roles``, no ``replied_user``): messages, edits, interaction
        replies and updates, follow-ups and their edits."""

        def payload(rec: Request) -> Json:
            if rec.route == "interaction_callback":
                return rec.json.get("data") or {} if rec.json.get("type") in (4, 7) else {}
            return rec.json if rec.route in MESSAGE_ROUTES else {}

        def guarded(allowed: Json | None) -> bool:
            keys = ("parse", "users", "roles", "replied_user")
            return allowed is not None and not any(allowed.get(k) for k in keys)

        sent = [(rec, payload(rec)) for rec in self.log]
        return [
            rec
            for rec, body in sent
            if body.get("content") and not guarded(body.get("allowed_mentions"))
        ]

    def file_bytes(self, attachment: Json) -> bytes:
        return self.files[attachment["id"]][0]
