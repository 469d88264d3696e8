"""The message bus on Redis Streams: private inboxes, team topics, a broadcast stream.

Each reading agent has its own consumer group (named after it) on every stream it reads,
created with the agent at id 0, so nothing sent before it was ready is missed. A turn reads
its mail in its start script (``core.state.turn_start``: pending entries, then new ones;
:func:`delivered` parses them). Sending and acknowledging happen inside the
sending/consuming turn's save, so a message is sent once and acknowledged only when the
turn that read it is saved. A turn that crashed leaves its messages pending; the next
delivery of that turn reads them again (id 0). A
message goes to the run's dead-letter stream only with the turn that read it, when that
turn is quarantined (``core.agent.quarantine``: it failed or its worker died too often):
the agent then ends with the reason, and its parent and the run's progress are told.

Part of the state room, the only room that speaks Redis commands (``core.state``); owns
the inboxes, team and broadcast streams, their consumer groups, the dead letters and the
wake-up claims. May call the Redis client, the store (names, specs, agent ids),
``core.state.keys`` and ``core.state.routing``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redis.exceptions import WatchError

from core.config import BusSettings
from core.state.keys import Keys
from core.state.routing import Route, RouteRefused, allowed_targets, check_direct, route_keyword
from core.state.store import PipelineWrite, Store
from core.types.agent import AgentSpec, AgentStatus
from core.types.messages import BUS_MESSAGE, Message

# Drop a wake-up claim only if it was made for ARGV[1] (the check and the delete at once).
_RELEASE_IF = """
local v = redis.call('GET', KEYS[1])
if v and tonumber(v) == tonumber(ARGV[1]) then return redis.call('DEL', KEYS[1]) end
return 0
"""

# An agent's id (ARGV[1] is its id or its name), spec and status, in one round trip:
# KEYS[1] the run's agent ids, KEYS[2] its names; ARGV[2] the run's agent key without the
# id (the agent's key is only known once its name is resolved).
_LOOKUP = """
local id = ARGV[1]
if redis.call('SISMEMBER', KEYS[1], id) == 0 then
  id = redis.call('HGET', KEYS[2], id)
  if not id then return false end
end
local found = redis.call('HMGET', ARGV[2] .. id, 'spec', 'status')
if not found[1] then return false end
return {id, found[1], found[2]}
"""

# How many agents' routing facts a process remembers.
_KNOWN_MAX = 4096


@dataclass(frozen=True)
class Delivered:
    stream: str
    entry_id: str
    message: Message


@dataclass(frozen=True)
class Outgoing:
    """A message routed and ready to be written in the sender's save transaction."""

    stream: str
    message: Message
    # Agents whose turn should be woken once the message is saved.
    recipients: tuple[str, ...]


class Bus:
    def __init__(self, store: Store, keys: Keys, settings: BusSettings) -> None:
        self.store = store
        self.redis = store.redis
        self.keys = keys
        self.settings = settings
        self._release = store.redis.register_script(_RELEASE_IF)
        self._lookup = store.redis.register_script(_LOOKUP)
        # (run, name or id) → the agent's spec, for routing (see ``_remember``).
        self._known: dict[tuple[str, str], AgentSpec] = {}

    # --- streams an agent reads -------------------------------------------------------

    def streams_of(self, run_id: str, spec: AgentSpec) -> list[str]:
        streams = [self.keys.inbox(run_id, spec.id), self.keys.broadcast(run_id)]
        if spec.team_id:
            streams.append(self.keys.team(run_id, spec.team_id))
        return streams

    def register_writes(self, run_id: str, spec: AgentSpec) -> list[PipelineWrite]:
        """Commands (for the creating transaction) that give a new agent its groups."""
        streams = self.streams_of(run_id, spec)
        team = spec.team_id

        def write(pipe: Any) -> None:
            for stream in streams:
                pipe.xgroup_create(stream, spec.id, id="0", mkstream=True)
            if team:
                pipe.sadd(self.keys.team_members(run_id, team), spec.id)

        return [write]

    # --- sending ----------------------------------------------------------------------

    async def route(self, run_id: str, sender: AgentSpec, to: str) -> tuple[Route, str]:
        """Resolve ``to`` (an id, a name, parent, team, all); refuse what the rules forbid.

        Returns the route and a label of the audience for the recipient's view.
        """
        keyword = route_keyword(sender, to)
        if keyword is not None:
            label = {"team": "your team", "all": "everyone"}.get(keyword.kind, "you")
            return keyword, label
        name = to.strip()
        recipient = self._known.get((run_id, name))
        if recipient is None:
            found = await self.lookup(run_id, name)
            if found is None:
                raise RouteRefused(
                    f'There is no agent "{to}" in this run (see roster()).',
                    allowed_targets(sender),
                )
            recipient = self._remember(run_id, name, found[0])
        return check_direct(sender, recipient), "you"

    def _remember(self, run_id: str, name: str, spec: AgentSpec) -> AgentSpec:
        """What routing reads of an agent (its id, name, parent and team) never changes
        once it exists, and names are unique in a run: the next message to it needs no
        round trip. Bounded: the oldest entries go first."""
        if len(self._known) >= _KNOWN_MAX:
            for key in list(self._known)[: _KNOWN_MAX // 4]:
                del self._known[key]
        self._known[(run_id, name)] = spec
        return spec

    async def lookup(self, run_id: str, name_or_id: str) -> tuple[AgentSpec, AgentStatus] | None:
        """The agent named (or with the id) ``name_or_id``: its spec and status, in one
        round trip (was three: the id, the name, the spec)."""
        keys = [self.keys.agents(run_id), self.keys.names(run_id)]
        agent_key = self.keys.agent(run_id, "")
        found: Any = await self._lookup(keys=keys, args=[name_or_id, agent_key])
        if not found:
            return None
        return AgentSpec.model_validate_json(found[1]), AgentStatus(str(found[2]))

    async def outgoing(self, run_id: str, route: Route, message: Message) -> Outgoing:
        if route.kind == "agent":
            return Outgoing(self.keys.inbox(run_id, route.target), message, (route.target,))
        if route.kind == "team":
            members = await self.store.team_members(run_id, route.target)
            others = tuple(m for m in members if m != message.sender)
            return Outgoing(self.keys.team(run_id, route.target), message, others)
        everyone = await self.store.agent_ids(run_id)
        return Outgoing(
            self.keys.broadcast(run_id), message, tuple(a for a in everyone if a != message.sender)
        )

    def send_writes(self, outgoing: list[Outgoing]) -> list[PipelineWrite]:
        maxlen = str(self.settings.stream_maxlen)

        def write(pipe: Any) -> None:
            for out in outgoing:
                # What ``pipe.xadd(stream, {"m": …}, maxlen=…, approximate=True)`` queues,
                # the message dumped by its own class's serializer (BUS_MESSAGE's bytes).
                message = out.message
                data = message.__pydantic_serializer__.to_json(message)
                pipe.execute_command("XADD", out.stream, b"MAXLEN", b"~", maxlen, "*", "m", data)

        return [write] if outgoing else []

    async def deliver(self, run_id: str, message: Message) -> None:
        """Put a message straight into its recipient's inbox (not from a turn: a person's
        answer, a reminder). The caller wakes the recipient."""
        out = Outgoing(self.keys.inbox(run_id, message.recipient), message, (message.recipient,))
        async with self.redis.pipeline(transaction=False) as pipe:
            for write in self.send_writes([out]):
                write(pipe)
            await pipe.execute()

    # --- receiving --------------------------------------------------------------------

    def ack_writes(
        self, spec: AgentSpec, run_id: str, delivered: list[Delivered], dead: list[Delivered]
    ) -> list[PipelineWrite]:
        def write(pipe: Any) -> None:
            for d in dead:
                pipe.xadd(
                    self.keys.dead_letters(run_id),
                    {"m": BUS_MESSAGE.dump_json(d.message), "reader": spec.id, "stream": d.stream},
                    maxlen=self.settings.stream_maxlen,
                    approximate=True,
                )
            for d in [*delivered, *dead]:
                pipe.xack(d.stream, spec.id, d.entry_id)

        return [write] if delivered or dead else []

    async def has_unread(self, run_id: str, spec: AgentSpec) -> bool:
        """True when any of the agent's groups has pending or not-yet-read entries."""
        streams = self.streams_of(run_id, spec)
        async with self.redis.pipeline(transaction=False) as pipe:
            for stream in streams:
                pipe.xinfo_groups(stream)
            replies: Any = await pipe.execute(raise_on_error=False)
        for stream, groups in zip(streams, replies, strict=True):
            if isinstance(groups, Exception):
                continue  # the stream does not exist yet
            group = next((g for g in groups if g["name"] == spec.id), None)
            if group is None:
                continue
            if group["pending"]:
                return True
            lag = group.get("lag")
            if lag is None:  # unknown after trimming: compare with the newest entry
                last: Any = await self.redis.xrevrange(stream, count=1)
                lag = int(bool(last) and _id(last[0][0]) > _id(group["last-delivered-id"]))
            if lag:
                return True
        return False

    # --- waking -----------------------------------------------------------------------

    async def claim_wake(self, run_id: str, agent_id: str) -> int | None:
        """If the agent waits, claim the right to schedule its next turn; return its seq.

        Only one claim succeeds until the woken turn is saved, so a burst of messages
        schedules exactly one turn. The status check and the claim are one transaction
        (WATCH on the agent): a claim read against a state that changed meanwhile would
        carry a stale seq, its turn would be dropped, and the agent would never wake.
        """
        agent_key, wake_key = self.keys.agent(run_id, agent_id), self.keys.wake(run_id, agent_id)
        for _ in range(10):
            async with self.redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(agent_key)
                    fields: Any = await pipe.hmget(agent_key, ["status", "seq"])
                    if fields[0] is None or not AgentStatus(fields[0]).waiting:
                        await pipe.unwatch()
                        return None
                    pipe.multi()
                    pipe.set(wake_key, fields[1], nx=True, ex=self.settings.wake_ttl_s)
                    (claimed,) = await pipe.execute()
                    return int(fields[1]) if claimed else None
                except WatchError:
                    continue
        return None

    async def release_stale_wake(self, run_id: str, agent_id: str, seq: int) -> bool:
        """Drop a wake-up claim made for ``seq`` (now stale); True if one was dropped."""
        return bool(await self._release(keys=[self.keys.wake(run_id, agent_id)], args=[seq]))

    def release_wake_write(self, run_id: str, agent_id: str) -> PipelineWrite:
        key = self.keys.wake(run_id, agent_id)
        return lambda pipe: pipe.delete(key)


def delivered(reply: Any) -> list[Delivered]:
    """The messages of one XREADGROUP reply (a pipeline's, or the turn start script's,
    whose entries' fields come as a flat list)."""
    out: list[Delivered] = []
    for stream, raw_entries in reply or ():
        for entry_id, fields in raw_entries:
            if not fields:  # trimmed entries are empty
                continue
            if not isinstance(fields, dict):
                fields = dict(zip(fields[::2], fields[1::2], strict=True))
            out.append(Delivered(stream, entry_id, BUS_MESSAGE.validate_json(fields["m"])))
    return out


def _id(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)
