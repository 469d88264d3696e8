"""Delivering one run's outbox (``bots.chat.outbox``) into its thread.

The courier of a run lives in the process holding the run's lease, beside the relay that
fills the outbox: the relay never waits for the platform, and the courier sends the
entries one at a time, oldest first, each removed once the platform took it, with the
platform's :class:`~bots.chat.ports.Transport`. The status message is posted by its
entry (so it comes before the milestones queued after it) and then updated in place with
its latest content whenever the platform shows an older one.

A call that fails is tried again with exponential back-off (capped at the platform's
``outbox_retry_max_s``; a 429 waits at least its Retry-After) while the failure is the
platform's (unreachable, 5xx, rate-limited). A message the platform refuses is shown
another way (``bots.chat.fallbacks``), each refusal a WARNING with the platform's words;
only when every way is refused is it dropped, with an ERROR and a note in the platform's
drops — as is an entry still undelivered ``outbox_max_age_s`` after it was queued.

Delivered once: an entry is removed right after its call succeeded. A crash (or Redis
failing) between the two leaves it queued, and the next courier sends it again: that
one entry, at most, may appear twice — except the run's own files (``files`` entries),
whose upload the transport keeps its progress of and makes once where the platform lets
it (Slack: ``bots.slack.file_upload``), and a streamed result (``stream`` entries,
``bots.chat.streams``), which goes on from the last piece that reached the thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator

from bots.chat.busy import Busy, stop_if_cancelled
from bots.chat.fallbacks import AS_RENDERED, IN_THE_CHANNEL, ONCE_MORE, Ladder, Way, ways
from bots.chat.outbox import GONE, Entry, Head, Outbox, Status
from bots.chat.ports import Adapter, Failure, Place
from bots.chat.streams import Streamer

log = logging.getLogger(__name__)
# The first retry waits this long; each further one twice as long (up to the cap).
FIRST_RETRY_S = 0.5
# An upload that the platform answers with errors this many times is given up for its
# fallback (the whole text in pieces): a broken upload service must not hold the thread up.
UPLOAD_TRIES = 3
# After Redis failed (reading or updating the outbox).
REDIS_RETRY_S = 1.0


class Courier:
    """Delivers ``run_id``'s outbox into ``place`` with ``adapter``'s transport."""

    def __init__(
        self,
        outbox: Outbox,
        adapter: Adapter,
        run_id: str,
        place: Place,
        busy: Busy | None = None,
    ) -> None:
        self.outbox, self.transport, self.platform = outbox, adapter.transport, adapter.name
        self.run_id, self.place = run_id, place
        self.retry_max_s = adapter.limits.outbox_retry_max_s
        self.max_age_s = adapter.limits.outbox_max_age_s
        self.busy = busy
        # Set when the relay queued something (or ended): look at the outbox again.
        self.wake = asyncio.Event()
        self.failures = 0  # of the call at hand, in a row
        # How far down its fallbacks the message at hand has gone (bots.chat.fallbacks).
        self.ladder = Ladder()

    async def run(self, ended: asyncio.Event) -> None:
        """Deliver until ``ended`` is set and everything is delivered (or dropped)."""
        while True:
            self.wake.clear()  # before reading: a wake-up while reading is not missed
            # Before reading too: the relay queues its last posts (the run's result) and
            # then ends; an end seen after a read that came before those posts (the read's
            # reply late, under load) would leave them undelivered, then gone with the
            # outbox (``relay_over``): a thread ending on a member's line, no result.
            over = ended.is_set()
            try:
                head = await self.outbox.head(self.run_id)
                if head.idle:
                    if over:
                        return
                    stop_if_cancelled()
                    await self.wake.wait()
                    continue
                delay = await self.attempt(head)
            except Exception:
                log.exception("the %s outbox of %s failed; retrying", self.platform, self.run_id)
                delay = REDIS_RETRY_S
            stop_if_cancelled()
            if delay:
                # New entries do not cut a back-off short: they wait behind the first.
                await asyncio.sleep(delay)

    async def attempt(self, head: Head) -> float:
        """One try at what comes next; how long to wait before the next try."""
        entry, raw, status = head.entry, head.raw, head.status
        if entry is None or raw is None:
            return await self._update(status)
        age = time.time() - entry.at
        if age > self.max_age_s:
            await self._lost(entry.what, age, entry.text)
            await self._give_up(entry, raw, status)
            return 0.0
        if entry.kind in ("post", "status", "update") and not entry.instead:
            return await self._show(entry, raw, status)
        if entry.kind == "stream" and not isinstance(self.transport, Streamer):
            await self._give_up(entry, raw, status)  # posted as usual instead
            return 0.0
        try:
            async with self._calling():
                message_id = await self._send(entry, status)
        except Exception as exc:
            failure = self.transport.classify(exc)
            uploading = entry.kind in ("upload", "files")
            if failure.retry and not (
                uploading and failure.answered and self.failures + 1 >= UPLOAD_TRIES
            ):
                return self._retry(entry.what, failure)
            if entry.instead:
                self._refused(entry.what, failure, "posting its fallback")
            else:
                await self._drop(entry.what, failure, entry.text)
            await self._give_up(entry, raw, status)
            return 0.0
        self._delivered(entry.what)
        await self._done(entry, raw, status, message_id)
        return 0.0

    async def _show(self, entry: Entry, raw: str, status: Status) -> float:
        """Post (or edit) ``entry``'s message the best way the platform takes."""
        if entry.kind == "status":
            text, payload = status.text, status.payload
        else:
            text, payload = entry.text, entry.payload
        edit = entry.message if entry.kind == "update" else None
        shown = await self._through(entry.id, entry.what, ways(self.place, text, payload, edit))
        if isinstance(shown, float):
            return shown
        if shown is None:
            await self._give_up(entry, raw, status)
        else:
            await self._done(entry, raw, status, shown)
        return 0.0

    async def _done(self, entry: Entry, raw: str, status: Status, message_id: str) -> None:
        """``entry`` is delivered (``message_id``: the message it posted): remove it."""
        if entry.kind == "status":
            await self.outbox.sent(self.run_id, raw, ts=message_id, version=status.version)
        elif entry.then:
            await self.outbox.replace(self.run_id, raw, entry.then)
        else:
            await self.outbox.sent(self.run_id, raw)
        # Only once the entry is gone: a crash before this finds the upload done.
        await self._forget(entry)

    async def _through(self, key: str, what: str, options: list[Way]) -> str | float | None:
        """One try down ``options`` for message ``key``: the id of the message showing it,
        how long to wait before the next try, or None: every way was refused (dropped)."""
        way = self.ladder.at(key, options)
        try:
            async with self._calling():
                message_id = await way.show(self.transport)
        except Exception as exc:
            failure = self.transport.classify(exc)
            if failure.retry:
                return self._retry(what, failure)
            self.failures = 0
            then = self.ladder.down(options)
            if then is None:
                await self._drop(what, failure, way.text)
                return None
            self._refused(what, failure, f"trying it {then.how}")
            # Once more after a pause; the plainer ways at once.
            return FIRST_RETRY_S if then.how == ONCE_MORE else 0.0
        self.ladder.reset()
        self._delivered(what if way.how == AS_RENDERED else f"{what} ({way.how})")
        if way.how == IN_THE_CHANNEL and way.place != self.place:
            self._log(
                logging.WARNING,
                "its %s thread refuses posts; posting in the channel now",
                self.platform,
            )
            self.place = way.place
        return message_id

    async def _send(self, entry: Entry, status: Status) -> str:
        """Deliver ``entry``; the id of the message it posted (if it posted one)."""
        transport, place = self.transport, self.place
        if entry.kind == "stream" and isinstance(transport, Streamer):
            return await transport.stream(place, entry.streamed)
        if entry.kind == "files":
            await transport.send_files(place, entry.outgoing)
            return ""
        if entry.kind == "upload":
            if entry.file is None:
                raise ValueError(f"the {entry.what} has no file")
            await transport.upload(place, entry.file)
            return ""
        if entry.kind == "update":
            await transport.update(place, entry.message, entry.text, entry.payload)
            return ""
        if entry.kind == "status":
            return await transport.post(place, status.text, status.payload)
        return await transport.post(place, entry.text, entry.payload)

    async def _update(self, status: Status) -> float:
        """Show the status message's latest content (in a new message if the platform
        refuses the edit for good: the status message lives on there)."""
        age = time.time() - status.at
        if age > self.max_age_s:
            await self._lost("status message's update", age, status.text)
            self.failures = 0
            await self.outbox.shown(self.run_id, status.version)
            return 0.0
        assert status.ts is not None  # stale: posted
        options = ways(self.place, status.text, status.payload, status.ts)
        shown = await self._through("status", "status message's update", options)
        if isinstance(shown, float):
            return shown
        if shown != status.ts:  # posted anew, or given up (None: refused every way)
            await self.outbox.moved(self.run_id, shown or GONE, status.version)
        else:
            await self.outbox.shown(self.run_id, status.version)
        return 0.0

    async def _forget(self, entry: Entry) -> None:
        if entry.kind == "files":
            await self.transport.forget_files(entry.outgoing)
        elif entry.kind == "stream" and isinstance(self.transport, Streamer):
            await self.transport.forget_stream(entry.streamed)

    async def _give_up(self, entry: Entry, raw: str, status: Status) -> None:
        self.failures = 0
        if entry.kind == "status":  # never posted: its updates cannot be shown either
            await self.outbox.sent(self.run_id, raw, ts=GONE, version=status.version)
        else:
            if entry.kind == "stream" and isinstance(self.transport, Streamer):
                await self.transport.abandon(self.place, entry.streamed)
            await self.outbox.replace(self.run_id, raw, entry.instead)
        await self._forget(entry)

    def _retry(self, what: str, failure: Failure) -> float:
        self.failures += 1
        back_off = min(self.retry_max_s, FIRST_RETRY_S * 2 ** (self.failures - 1))
        # Jitter: the couriers of many runs do not all come back at once after an outage.
        delay = max(back_off * random.uniform(0.75, 1.0), failure.wait_s)
        level = logging.WARNING if self.failures == 1 else logging.DEBUG
        how = f"({failure.why}); try {self.failures + 1} again in {delay:.1f} s"
        self._log(level, "the %s did not reach %s %s", what, self.platform, how)
        return delay

    def _delivered(self, what: str) -> None:
        if self.failures:
            tries = self.failures + 1
            self._log(logging.INFO, "the %s reached %s after %d tries", what, self.platform, tries)
        self.failures = 0

    def _refused(self, what: str, failure: Failure, then: str) -> None:
        self._log(
            logging.WARNING, "%s refused the %s (%s); %s", self.platform, what, failure.why, then
        )

    async def _drop(self, what: str, failure: Failure, text: str) -> None:
        """Every way of showing it was refused: the log says which run lost what, and the
        platform's drops note it."""
        self._log(
            logging.ERROR,
            "%s refused the %s in every way (last: %s); dropped: %.200r",
            *(self.platform, what, failure.why, text),
        )
        await self.outbox.dropped(self.run_id, what, failure.why)

    async def _lost(self, what: str, age: float, text: str) -> None:
        self._log(
            logging.ERROR,
            "the %s was not delivered to %s within outbox_max_age_s (%.0f s, queued %.0f s "
            "ago); dropped: %.200r",
            *(what, self.platform, self.max_age_s, age, text),
        )
        await self.outbox.dropped(self.run_id, what, "not delivered within outbox_max_age_s")

    def _log(self, level: int, text: str, *args: object) -> None:
        log.log(level, "run %s: " + text, self.run_id, *args)

    @contextlib.asynccontextmanager
    async def _calling(self) -> AsyncIterator[None]:
        """A stopping bot waits (a little) for a call under way rather than cut it off:
        a call cut off after the platform did it is made again by the next courier."""
        key = f"{self.run_id}:courier"
        if self.busy is not None:
            self.busy.add(key)
        try:
            yield
        finally:
            if self.busy is not None:
                self.busy.discard(key)
