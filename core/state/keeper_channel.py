"""The call keeper's channel in Redis: a turn's in-flight mark (``keys.llm_call``), the
calls stream the keepers read through one consumer group (``keys.llm_calls``), a kept
error (``keys.llm_result``), the keepers' heartbeat (``keys.llm_keepers``) and the
requesting processes' notice channels (``keys.llm_replies``).

Both sides use it: the worker's client (``core.agent.keeper_client``) and the keeper
(``core.process.keeper``). Part of the state room, the only room that speaks Redis
commands (``core.state``); it may call the Redis client and ``core.state.keys``. What a
call, an answer and an outcome are lives above; here they are strings."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from core.state.keys import Keys

GROUP = "keepers"

Entry = tuple[str, dict[str, str]]

# KEYS: the run's saved answers, the call's mark, its kept outcome. ARGV: the answer's
# field, the saved answer ('' for an error), its TTL, the outcome ('' for an answer), its
# TTL, the mark's value, the channel to tell, the call id.
_FINISH = """
if ARGV[2] ~= '' then
  redis.call('hset', KEYS[1], ARGV[1], ARGV[2])
  redis.call('expire', KEYS[1], ARGV[3])
end
if ARGV[4] ~= '' then
  redis.call('set', KEYS[3], ARGV[4], 'EX', ARGV[5])
end
if redis.call('get', KEYS[2]) == ARGV[6] then
  redis.call('del', KEYS[2])
end
redis.call('publish', ARGV[7], ARGV[8])
return 1
"""


# KEYS: the keepers' heartbeat, the call's mark, the calls stream. ARGV: the request's
# fingerprint, the new mark, its TTL in ms, then the call's fields as name, value pairs.
# Marks the call in flight and hands it to the keepers in one step, so a mark never
# stands without its call on the stream (a worker killed in between left one, and every
# later delivery of the turn waited for a call nobody was making).
_ASK = """
local alive = redis.call('exists', KEYS[1])
local current = redis.call('get', KEYS[2])
if current then
  local space = string.find(current, ' ', 1, true)
  if space and string.sub(current, space + 1) == ARGV[1] then
    return {alive, 'joined', current}
  end
end
if alive == 0 then
  return {0, 'direct', current or ''}
end
redis.call('set', KEYS[2], ARGV[2], 'PX', ARGV[3])
local fields = {}
for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('xadd', KEYS[3], '*', unpack(fields))
return {1, 'asked', ARGV[2]}
"""

# KEYS: the calls stream, the call's mark. ARGV: the group, the entry id, the mark ('' for
# none). The call's entry acknowledged and deleted, and its mark removed if it still
# stands, in one step: a failover that lost the keeper's end (answer saved, mark removed)
# but kept this left no mark that every later delivery of the turn would wait on until it
# expired (the call TTL, minutes); its waiting turn finds the mark gone with no outcome
# and asks again.
_DONE = """
redis.call('xack', KEYS[1], ARGV[1], ARGV[2])
redis.call('xdel', KEYS[1], ARGV[2])
if ARGV[3] ~= '' and redis.call('get', KEYS[2]) == ARGV[3] then
  redis.call('del', KEYS[2])
end
return 1
"""


class KeeperChannel:
    """Marks, calls, outcomes and notices between the workers and the call keepers."""

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self.redis = redis
        self.keys = keys
        self.stream = keys.llm_calls()
        self._finish = redis.register_script(_FINISH)
        self._ask = redis.register_script(_ASK)
        self._done = redis.register_script(_DONE)

    # --- the worker's side --------------------------------------------------------------

    async def ask(
        self,
        run_id: str,
        agent_id: str,
        seq: int,
        mark: str,
        ttl_ms: int,
        fields: dict[str, str],
    ) -> tuple[str, str]:
        """Ask the keepers for turn ``seq``'s call, in one step (one script): ``joined``
        and the mark when an earlier delivery's call of this very request (the
        fingerprint after the mark's call id) is in flight; ``direct`` when no keeper is
        alive (nothing is marked: call the model here); else ``asked``: ``mark`` set (a
        mark of another request replaced) and ``fields`` on the calls stream together."""
        fingerprint = mark.partition(" ")[2]
        pairs = [x for item in fields.items() for x in item]
        keys = [self.keys.llm_keepers(), self.keys.llm_call(run_id, agent_id, seq), self.stream]
        _alive, how, current = await self._ask(keys, [fingerprint, mark, ttl_ms, *pairs])
        return str(how), str(current)

    async def look(
        self, run_id: str, agent_id: str, seq: int, call_id: str
    ) -> tuple[str | None, str | None, str | None]:
        """The turn's saved answer, the call's kept outcome and the mark now, at once."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hget(self.keys.responses(run_id), self.keys.response_field(agent_id, seq))
            pipe.get(self.keys.llm_result(run_id, call_id))
            pipe.get(self.keys.llm_call(run_id, agent_id, seq))
            saved, result, current = await pipe.execute()
        return saved, result, current

    async def drop_result(self, run_id: str, call_id: str) -> None:
        await self.redis.delete(self.keys.llm_result(run_id, call_id))

    async def notices(self, process: str, subscribed: Callable[[], None]) -> AsyncIterator[str]:
        """The ids of this process's calls that ended, as the keepers tell them (one
        subscriber per process); ``subscribed`` is called once listening."""
        pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(self.keys.llm_replies(process))
            subscribed()
            async for message in pubsub.listen():
                data = message.get("data")
                yield data.decode() if isinstance(data, bytes) else str(data)
        finally:
            await pubsub.aclose()

    # --- the keeper's side --------------------------------------------------------------

    async def create_group(self) -> None:
        try:
            await self.redis.xgroup_create(self.stream, GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def read(self, consumer: str, count: int, block_ms: int) -> list[Entry]:
        """New calls for ``consumer``; none (and the group made again) when Redis lost
        the stream (restarted empty)."""
        try:
            got: Any = await self.redis.xreadgroup(
                GROUP, consumer, {self.stream: ">"}, count=count, block=block_ms
            )
        except ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            await self.create_group()
            return []
        return [entry for _stream, entries in got or () for entry in entries]

    async def done(self, entry_id: str, mark_of: tuple[str, str, int, str] | None = None) -> None:
        """Acknowledge and delete a call's entry; with ``mark_of`` (run, agent, seq, mark),
        remove that mark too if it still stands (one script)."""
        if mark_of is None:
            keys, mark = [self.stream, self.stream], ""
        else:
            run_id, agent_id, seq, mark = mark_of
            keys = [self.stream, self.keys.llm_call(run_id, agent_id, seq)]
        await self._done(keys, [GROUP, entry_id, mark])

    async def in_flight(
        self, run_id: str, agent_id: str, seq: int
    ) -> tuple[str | None, str | None]:
        """The turn's saved answer and its call's mark, at once."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hget(self.keys.responses(run_id), self.keys.response_field(agent_id, seq))
            pipe.get(self.keys.llm_call(run_id, agent_id, seq))
            saved, mark = await pipe.execute()
        return saved, mark

    async def finish(
        self, run_id: str, agent_id: str, seq: int, call_id: str, *, ends: tuple[Any, ...]
    ) -> None:
        """End a call in one script: ``ends`` = (saved answer or '', its TTL, kept outcome
        or '', its TTL, the mark, the channel to tell)."""
        saved, saved_ttl, kept, kept_ttl, mark, reply_to = ends
        await self._finish(
            keys=[
                self.keys.responses(run_id),
                self.keys.llm_call(run_id, agent_id, seq),
                self.keys.llm_result(run_id, call_id),
            ],
            args=[
                self.keys.response_field(agent_id, seq),
                saved,
                saved_ttl,
                kept,
                kept_ttl,
                mark,
                reply_to,
                call_id,
            ],
        )

    async def beat(self, name: str, ttl_ms: int) -> None:
        """The keeper's heartbeat: workers hand calls over while it lasts."""
        await self.redis.set(self.keys.llm_keepers(), name, px=ttl_ms)

    async def refresh(self, consumer: str, entry_ids: list[str]) -> None:
        """Keep the calls ``consumer`` is making fresh in the group (not taken over)."""
        await self.redis.xclaim(self.stream, GROUP, consumer, 0, entry_ids, justid=True)  # type: ignore[arg-type]

    async def take_over(self, consumer: str, idle_ms: int, count: int) -> list[Entry]:
        """Calls idle longer than ``idle_ms`` (their keeper died), now ``consumer``'s."""
        claimed: Any = await self.redis.xautoclaim(
            self.stream, GROUP, consumer, idle_ms, start_id="0-0", count=count
        )
        return list(claimed[1]) if claimed else []

    async def forget_consumers(self, keep: str, idle_ms: float) -> None:
        """Remove the group's consumers with nothing pending, idle over ``idle_ms``."""
        consumers: Any = await self.redis.xinfo_consumers(self.stream, GROUP)
        for c in consumers:
            if not c["pending"] and c["idle"] > idle_ms and c["name"] != keep:
                await self.redis.xgroup_delconsumer(self.stream, GROUP, c["name"])

    async def leave(self, name: str) -> None:
        """Drop the heartbeat if it is ``name``'s."""
        if await self.redis.get(self.keys.llm_keepers()) == name:
            await self.redis.delete(self.keys.llm_keepers())

    async def alive(self) -> str | None:
        """The name of a keeper whose heartbeat is on, if any."""
        found: Any = await self.redis.get(self.keys.llm_keepers())
        return None if found is None else str(found)
