"""Delivering one run's outbox (``bots.chat.outbox``) into its thread.

The courier of a run lives in the process holding the run's lease, beside the relay that
fills the outbox: the relay never waits for the platform, and the courier sends the
entries one at a time, oldest first, each removed once the platform took it, with the
platform's :class:`~bots.chat.ports.Transport`. The status message is posted by its
entry (so it comes before the milestones queued after it) and then updated in place with
its latest content whenever the platform shows an older one.

A call that fails is tried again with exponential back-off (capped at the platform's
``outbox_retry_max_s``; a 429 waits at least its Retry-After) while the failure is the
platform's (unreachable, 5xx, rate-limited); the platform refusing the call itself drops
it (or posts its fallback). An entry still undelivered ``outbox_max_age_s`` after it was
queued is dropped, and the log says which run lost what.

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

    async def run(self, ended: asyncio.Event) -> None:
        """Deliver until ``ended`` is set and everything is delivered (or dropped)."""
        while True:
            self.wake.clear()  # before reading: a wake-up while reading is not missed
            try:
                head = await self.outbox.head(self.run_id)
                if head.idle:
                    if ended.is_set():
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
            self._lost(entry.what, age, entry.text)
            await self._give_up(entry, raw, status)
            return 0.0
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
            log.error(
                "run %s: %s refused the %s (%s); %s",
                self.run_id,
                self.platform,
                entry.what,
                failure.why,
                "posting its fallback" if entry.instead else "dropped",
            )
            await self._give_up(entry, raw, status)
            return 0.0
        self._delivered(entry.what)
        if entry.kind == "status":
            await self.outbox.sent(self.run_id, raw, ts=message_id, version=status.version)
        elif entry.then:
            await self.outbox.replace(self.run_id, raw, entry.then)
        else:
            await self.outbox.sent(self.run_id, raw)
        # Only once the entry is gone: a crash before this finds the upload done.
        await self._forget(entry)
        return 0.0

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
        if entry.kind == "status":
            return await transport.post(place, status.text, status.payload)
        return await transport.post(place, entry.text, entry.payload)

    async def _update(self, status: Status) -> float:
        """Show the status message's latest content."""
        age = time.time() - status.at
        if age > self.max_age_s:
            self._lost("status message's update", age, status.text)
            self.failures = 0
            await self.outbox.shown(self.run_id, status.version)
            return 0.0
        assert status.ts is not None  # stale: posted
        try:
            async with self._calling():
                await self.transport.update(self.place, status.ts, status.text, status.payload)
        except Exception as exc:
            failure = self.transport.classify(exc)
            if failure.retry:
                return self._retry("status message's update", failure)
            log.error(
                "run %s: %s refused the status update (%s)", self.run_id, self.platform, failure.why
            )
            self.failures = 0
        else:
            self._delivered("status message's update")
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
        log.log(
            level,
            "run %s: the %s did not reach %s (%s); try %d again in %.1f s",
            self.run_id,
            what,
            self.platform,
            failure.why,
            self.failures + 1,
            delay,
        )
        return delay

    def _delivered(self, what: str) -> None:
        if self.failures:
            tries = self.failures + 1
            log.info(
                "run %s: the %s reached %s after %d tries", self.run_id, what, self.platform, tries
            )
        self.failures = 0

    def _lost(self, what: str, age: float, text: str) -> None:
        log.error(
            "run %s: the %s was not delivered to %s within outbox_max_age_s "
            "(%.0f s, queued %.0f s ago); dropped: %.200r",
            self.run_id,
            what,
            self.platform,
            self.max_age_s,
            age,
            text,
        )

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
