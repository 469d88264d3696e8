"""The chat layer's store, its runs' outboxes: what each relay queues for its courier to
post (one transaction with the status message's new content and the relay's progress), the
redraws to deliver, and the messages a platform never showed (its drops, for the
operator). Part of :class:`bots.chat.store.ChatStore` (its one Redis room with
:mod:`bots.chat.store`), under the keys of ``bots.chat.keys``; read and written through
``bots.chat.outbox``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from redis.exceptions import WatchError

from bots.chat.keys import ChatKeys
from core.state.durable_writes import replicated
from core.state.keys import Keys

_WATCH_TRIES = 20
# The messages dropped that a platform's drops keep (about: trimmed approximately).
DROPS_KEPT = 1000


class OutboxStore:
    """Each run's outbox in one platform's part of Redis (:class:`~bots.chat.store.ChatStore`
    sets the client and the keys)."""

    redis: Any
    keys: ChatKeys
    _core_keys: Keys  # the WAIT's marker (core.state.durable_writes)

    async def queue(
        self,
        run_id: str,
        entries: Sequence[str],
        status: Mapping[str, Any] | None = None,
        relay: str | None = None,
    ) -> None:
        """Queue ``entries``, write the status message's new content (``version`` + 1) and
        the relay's progress ``relay``: one transaction (a replayed event adds nothing);
        with entries, on ``redis.replicas_to_ack`` replicas before it returns."""
        async with self.redis.pipeline(transaction=True) as pipe:
            if relay is not None:
                pipe.hset(self.keys.relays, run_id, relay)
            if entries:
                pipe.rpush(self.keys.outbox(run_id), *entries)
            if status is not None:
                pipe.hset(self.keys.outbox_status(run_id), mapping=dict(status))
                pipe.hincrby(self.keys.outbox_status(run_id), "version", 1)
            await pipe.execute()
        if entries:  # on redis.replicas_to_ack replicas (nothing sent when 0)
            await replicated(self.redis, self._core_keys)

    async def queue_redraw(self, queue: str, entry: str, place: str) -> None:
        """Queue redraw ``entry`` in outbox ``queue``, noted (at ``place``) as to deliver."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.rpush(self.keys.outbox(queue), entry)
            pipe.hset(self.keys.redraws, queue, place)
            await pipe.execute()

    async def redraws_done(self, queue: str) -> None:
        """Forget ``queue`` among the redraws to deliver, unless a redraw is queued."""
        async with self.redis.pipeline(transaction=True) as pipe:
            with contextlib.suppress(WatchError):  # one queued meanwhile: still noted
                await pipe.watch(self.keys.outbox(queue))
                if not await pipe.llen(self.keys.outbox(queue)):
                    pipe.multi()
                    pipe.hdel(self.keys.redraws, queue)
                    await pipe.execute()

    async def note_drop(self, run_id: str, what: str, why: str) -> None:
        """Note a message the platform never showed in the platform's drops (the newest
        ``DROPS_KEPT``), for the operator."""
        fields = {"run": run_id, "what": what, "why": why[:300]}
        await self.redis.xadd(self.keys.drops, fields, maxlen=DROPS_KEPT, approximate=True)

    async def drops(self, count: int = 100) -> list[dict[str, str]]:
        """The newest ``count`` messages dropped, newest first."""
        return [fields for _id, fields in await self.redis.xrevrange(self.keys.drops, count=count)]

    async def relay_over(self, run_id: str) -> None:
        """The run's relay ended with everything delivered: its progress and outbox go."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hdel(self.keys.relays, run_id)
            pipe.delete(self.keys.outbox(run_id), self.keys.outbox_status(run_id))
            await pipe.execute()

    async def status_once(self, run_id: str, field: str, value: str) -> None:
        await self.redis.hsetnx(self.keys.outbox_status(run_id), field, value)

    async def set_status(self, run_id: str, fields: Mapping[str, Any]) -> None:
        await self.redis.hset(self.keys.outbox_status(run_id), mapping=dict(fields))

    async def head(self, run_id: str) -> tuple[str | None, dict[str, str]]:
        """The outbox's first entry (as stored) and the status hash, in one round trip."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.lindex(self.keys.outbox(run_id), 0)
            pipe.hgetall(self.keys.outbox_status(run_id))
            raw, status = await pipe.execute()
        return raw, dict(status or {})

    async def sent(self, run_id: str, raw: str, status: Mapping[str, Any] | None = None) -> None:
        """Remove the delivered entry ``raw`` (a no-op if another courier did) and write
        ``status`` fields, together."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.lrem(self.keys.outbox(run_id), 1, raw)
            if status:
                pipe.hset(self.keys.outbox_status(run_id), mapping=dict(status))
            await pipe.execute()

    async def replace(self, run_id: str, raw: str, entries: Sequence[str]) -> None:
        """Put ``entries`` in place of the first entry if it is still ``raw``."""
        key = self.keys.outbox(run_id)
        for _ in range(_WATCH_TRIES):
            async with self.redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(key)  # the relay may add entries meanwhile: retried
                    if await pipe.lindex(key, 0) != raw:
                        return
                    pipe.multi()
                    pipe.lpop(key)
                    if entries:
                        pipe.lpush(key, *reversed(entries))
                    await pipe.execute()
                    return
                except WatchError:
                    continue
        raise WatchError(f"the outbox of {run_id} kept changing")
