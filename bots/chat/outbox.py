"""A durable outbox of what a run's relay posts into its thread, kept in Redis.

The relay never calls the chat platform: it adds its posts here (in the same transaction
as its progress, so an event replayed after a restart adds nothing twice) and the run's
courier (``bots.chat.courier``) delivers them, in order, retrying while the platform is
unreachable.

Keys, under ``{redis.key_prefix}:{platform}:outbox:{run_id}`` (one run, one thread; for
Slack ``…:slack:outbox:…``, as before the chat layer was shared):

- the key itself: a list of :class:`Entry` (JSON), oldest first. Only its head is
  delivered; it is removed once the platform took it, so the thread gets them in order.
- ``…:status``: a hash for the run's status message, posted once (an entry of kind
  ``status``) and then updated in place: its latest content (``text``, ``blocks``: the
  payload as JSON, named so since Slack's blocks), ``version`` (counts the contents
  written), ``at`` (when the latest was written), ``shown`` (the version the platform
  shows) and ``ts`` (the message's id, once posted; ``-`` if its post was given up).
  Updates are not queued: the courier shows the latest content whenever the platform
  shows an older one, so a long outage ends with one update.

Both keys go when the run's relay ends with everything delivered.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import AliasChoices, Field
from redis.exceptions import WatchError

from bots.chat.ports import Files, OutFile, Payload, Rendered, TextFile
from bots.chat.streams import Streamed
from core.types._base import Frozen

# ``ts`` of a status message whose post was given up: its updates are dropped too.
GONE = "-"
_WATCH_TRIES = 20


class Entry(Frozen):
    """One post of a relay (``kind`` post: ``text`` and ``payload``, rendered), its status
    message (``status``: the content is read from the status hash when posted), a text
    file (``upload``: ``file``), files of the run's workspace (``files``: uploaded
    together, with ``text`` as their message; ``Transport.send_files``), or a message
    streamed (``stream``: ``text`` and ``payload``; ``bots.chat.streams``)."""

    run: str
    what: str  # what it is, for the log: "milestone", "result", "proposal card", …
    kind: Literal["post", "status", "upload", "files", "stream"] = "post"
    text: str = ""
    # Entries queued before the chat layer was shared call it ``blocks``.
    payload: Payload = Field(None, validation_alias=AliasChoices("payload", "blocks"))
    file: TextFile | None = None
    files: tuple[OutFile, ...] = ()
    # Posted in its place once it is delivered (an upload's preview) …
    then: tuple[Entry, ...] = ()
    # … or if it cannot be (the platform refused it for good): a fallback, else nothing.
    instead: tuple[Entry, ...] = ()
    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    at: float = Field(default_factory=time.time)

    @classmethod
    def post(cls, run: str, what: str, message: Rendered) -> Entry:
        """A post of ``message``."""
        return cls(run=run, what=what, text=message.text, payload=message.payload)

    @property
    def outgoing(self) -> Files:
        """A ``files`` entry as the transport sends it (keyed by this entry's id)."""
        return Files(run=self.run, key=self.id, files=self.files, comment=self.text)

    @property
    def streamed(self) -> Streamed:
        """A ``stream`` entry as the streamer sends it (keyed by this entry's id)."""
        return Streamed(run=self.run, key=self.id, text=self.text, payload=self.payload)


@dataclass(frozen=True)
class Status:
    """The status hash of a run, read in one go."""

    text: str = ""
    payload: Payload = None
    version: int = 0
    shown: int = 0
    at: float = 0.0
    ts: str | None = None

    @property
    def stale(self) -> bool:
        """Whether the message is in the thread and shows older content than the latest."""
        return self.ts not in (None, GONE) and self.version > self.shown

    @classmethod
    def parse(cls, raw: dict[str, str]) -> Status:
        blocks = raw.get("blocks")
        return cls(
            text=raw.get("text", ""),
            payload=json.loads(blocks) if blocks else None,
            version=int(raw.get("version", 0)),
            shown=int(raw.get("shown", 0)),
            at=float(raw.get("at", 0.0)),
            ts=raw.get("ts") or None,
        )


@dataclass(frozen=True)
class Head:
    """What a run's outbox holds next: its first entry (and that entry as stored), and
    the status message's state."""

    entry: Entry | None
    raw: str | None
    status: Status

    @property
    def idle(self) -> bool:
        """Nothing to deliver: no entry, and the status message shows its latest."""
        return self.entry is None and not self.status.stale


class Outbox:
    """The outboxes of one platform's runs (``platform``: its part of the keys)."""

    def __init__(self, redis: Any, key_prefix: str, platform: str) -> None:
        self.redis = redis
        self.prefix = f"{key_prefix}:{platform}:outbox"

    def _queue(self, run_id: str) -> str:
        return f"{self.prefix}:{run_id}"

    def _status(self, run_id: str) -> str:
        return f"{self.prefix}:{run_id}:status"

    # -- the relay's side: written in the transaction that saves its progress ----------

    def add(
        self,
        pipe: Any,
        run_id: str,
        entries: Sequence[Entry],
        status: Rendered | None = None,
    ) -> None:
        """Queue ``entries`` and write the status message's new content into the
        transaction ``pipe``."""
        if entries:
            pipe.rpush(self._queue(run_id), *(e.model_dump_json() for e in entries))
        if status is not None:
            key = self._status(run_id)
            blocks = json.dumps(status.payload)
            pipe.hset(key, mapping={"text": status.text, "blocks": blocks, "at": time.time()})
            pipe.hincrby(key, "version", 1)

    def drop(self, pipe: Any, run_id: str) -> None:
        """Remove the run's outbox (its relay ended, everything delivered) in ``pipe``."""
        pipe.delete(self._queue(run_id), self._status(run_id))

    async def keep_ts(self, run_id: str, ts: str) -> None:
        """The status message a relay from before the outbox posted (``Shown.status_ts``)."""
        await self.redis.hsetnx(self._status(run_id), "ts", ts)

    # -- the courier's side --------------------------------------------------------------

    async def head(self, run_id: str) -> Head:
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.lindex(self._queue(run_id), 0)
            pipe.hgetall(self._status(run_id))
            raw, status = await pipe.execute()
        entry = None if raw is None else Entry.model_validate_json(raw)
        return Head(entry, raw, Status.parse(status or {}))

    async def sent(self, run_id: str, raw: str, *, ts: str | None = None, version: int = 0) -> None:
        """Remove the delivered entry ``raw`` (as stored); for the status message, keep
        its ``ts`` and the ``version`` it shows, in the same transaction."""
        async with self.redis.pipeline(transaction=True) as pipe:
            # LREM of the exact entry: a no-op if another courier removed it already.
            pipe.lrem(self._queue(run_id), 1, raw)
            if ts is not None:
                pipe.hset(self._status(run_id), mapping={"ts": ts, "shown": version})
            await pipe.execute()

    async def replace(self, run_id: str, raw: str, entries: Sequence[Entry]) -> None:
        """Put ``entries`` in place of the first entry if it is still ``raw`` (an upload
        by its preview, a refused post by its fallback, or by nothing)."""
        key = self._queue(run_id)
        for _ in range(_WATCH_TRIES):
            async with self.redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(key)  # the relay may add entries meanwhile: retried
                    if await pipe.lindex(key, 0) != raw:
                        return
                    pipe.multi()
                    pipe.lpop(key)
                    if entries:
                        pipe.lpush(key, *(e.model_dump_json() for e in reversed(entries)))
                    await pipe.execute()
                    return
                except WatchError:
                    continue
        raise WatchError(f"the outbox of {run_id} kept changing")

    async def shown(self, run_id: str, version: int) -> None:
        """The platform shows the status message's content ``version`` (or it was given
        up)."""
        await self.redis.hset(self._status(run_id), "shown", version)
