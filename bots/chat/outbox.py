"""A durable outbox of what a run's relay posts into its thread, kept in Redis.

The relay never calls the chat platform: it adds its posts here (in the same transaction
as its progress, so an event replayed after a restart adds nothing twice) and the run's
courier (``bots.chat.courier``) delivers them, in order, retrying while the platform is
unreachable.

Kept in the chat layer's store (``bots.chat.store``), under
``{redis.key_prefix}:{platform}:outbox:{run_id}`` (one run, one thread; for Slack
``…:slack:outbox:…``, as before the chat layer was shared):

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
from typing import Literal

from pydantic import AliasChoices, Field

from bots.chat.ports import Files, OutFile, Payload, Rendered, TextFile
from bots.chat.store import ChatStore
from bots.chat.streams import Streamed
from core.types._base import Frozen

# ``ts`` of a status message given up (refused every way: ``bots.chat.fallbacks``): its
# later contents are not shown.
GONE = "-"


class Entry(Frozen):
    """One post of a relay (``kind`` post: ``text`` and ``payload``, rendered), its status
    message (``status``: the content is read from the status hash when posted), a text
    file (``upload``: ``file``), files of the run's workspace (``files``: uploaded
    together, with ``text`` as their message; ``Transport.send_files``), or a message
    streamed (``stream``: ``text`` and ``payload``; ``bots.chat.streams``)."""

    run: str
    what: str  # what it is, for the log: "milestone", "result", "proposal card", …
    kind: Literal["post", "status", "upload", "files", "stream", "update"] = "post"
    # An ``update``'s message: new content (``text``, ``payload``) shown in it in place
    # (a proposal card redrawn once decided, queued apart: ``bots.chat.redraw``).
    message: str = ""
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
    """The outboxes of one platform's runs, in its chat ``store``."""

    def __init__(self, store: ChatStore) -> None:
        self.store = store

    # -- the relay's side: written in the transaction that saves its progress ----------

    async def add(
        self,
        run_id: str,
        entries: Sequence[Entry],
        status: Rendered | None = None,
        *,
        progress: str | None = None,
    ) -> None:
        """Queue ``entries`` and write the status message's new content, in one
        transaction with the relay's ``progress`` (``Shown`` as JSON) if given."""
        fields = None
        if status is not None:
            fields = {"text": status.text, "blocks": json.dumps(status.payload), "at": time.time()}
        queued = [e.model_dump_json() for e in entries]
        await self.store.queue(run_id, queued, fields, relay=progress)

    async def keep_ts(self, run_id: str, ts: str) -> None:
        """The status message a relay from before the outbox posted (``Shown.status_ts``)."""
        await self.store.status_once(run_id, "ts", ts)

    # -- the courier's side --------------------------------------------------------------

    async def head(self, run_id: str) -> Head:
        raw, status = await self.store.head(run_id)
        entry = None if raw is None else Entry.model_validate_json(raw)
        return Head(entry, raw, Status.parse(status))

    async def sent(self, run_id: str, raw: str, *, ts: str | None = None, version: int = 0) -> None:
        """Remove the delivered entry ``raw`` (as stored); for the status message, keep
        its ``ts`` and the ``version`` it shows, in the same transaction."""
        await self.store.sent(run_id, raw, None if ts is None else {"ts": ts, "shown": version})

    async def replace(self, run_id: str, raw: str, entries: Sequence[Entry]) -> None:
        """Put ``entries`` in place of the first entry if it is still ``raw`` (an upload
        by its preview, a refused post by its fallback, or by nothing)."""
        await self.store.replace(run_id, raw, [e.model_dump_json() for e in entries])

    async def moved(self, run_id: str, ts: str, version: int) -> None:
        """The status message lives on in message ``ts`` (posted anew), showing
        ``version``."""
        await self.store.set_status(run_id, {"ts": ts, "shown": version})

    async def dropped(self, run_id: str, what: str, why: str) -> None:
        """Note a message of the run that the platform never showed (``what``, and the
        platform's words ``why``) in the platform's drops."""
        await self.store.note_drop(run_id, what, why)

    async def shown(self, run_id: str, version: int) -> None:
        """The platform shows the status message's content ``version`` (or it was given
        up)."""
        await self.store.set_status(run_id, {"shown": version})
