"""Delivering one run's outbox (``bots.slack.outbox``) into its Slack thread.

The courier of a run lives in the process holding the run's lease, beside the relay that
fills the outbox: the relay never waits for Slack, and the courier sends the entries one
at a time, oldest first, each removed once Slack took it. The status message is posted
by its entry (so it comes before the milestones queued after it) and then updated in
place with its latest content whenever Slack shows an older one.

A call that fails is tried again with exponential back-off (capped at
``slack.outbox_retry_max_s``; a 429 waits at least its Retry-After) while the failure is
Slack's (unreachable, 5xx, rate-limited); Slack refusing the call itself drops it (or
posts its fallback). An entry still undelivered ``slack.outbox_max_age_s`` after it was
queued is dropped, and the log says which run lost what.

Delivered once: an entry is removed right after its call succeeded. A crash (or Redis
failing) between the two leaves it queued, and the next courier sends it again: that
one entry, at most, may appear twice — except the run's own files (``files`` entries),
whose upload keeps its progress in Redis and is never made twice
(``bots.slack.file_upload``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bots.slack.failures import Failure, classify
from bots.slack.file_upload import FileSender
from bots.slack.outbox import GONE, Entry, Head, Outbox, Status
from core.config import SlackSettings

log = logging.getLogger(__name__)
# The first retry waits this long; each further one twice as long (up to the cap).
FIRST_RETRY_S = 0.5
# An upload that Slack answers with errors this many times is given up for its fallback
# (the whole text in pieces): a broken upload service must not hold the thread up.
UPLOAD_TRIES = 3
# After Redis failed (reading or updating the outbox).
REDIS_RETRY_S = 1.0


def stop_if_cancelled() -> None:
    """Raise CancelledError if this task was asked to stop. On Python 3.11,
    ``asyncio.wait_for`` swallows a cancellation that comes as the awaited call ends, and
    redis-py awaits every command's write with it (measured: a task cancelled during
    ``redis.get`` returned normally about 7 times in 10); a loop checks here before it
    waits again, or a stopping bot would wait for it forever."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class Busy:
    """Runs whose relay is queueing an event (or whose courier is calling Slack) right
    now; ``idle`` is set when there are none (a stopping bot waits for it, so no relay
    stops halfway through an event)."""

    def __init__(self) -> None:
        self.runs: set[str] = set()
        self.idle = asyncio.Event()
        self.idle.set()

    def add(self, run_id: str) -> None:
        self.runs.add(run_id)
        self.idle.clear()

    def discard(self, run_id: str) -> None:
        self.runs.discard(run_id)
        if not self.runs:
            self.idle.set()


class Courier:
    """Delivers ``run_id``'s outbox into ``channel``/``thread`` with ``client``."""

    def __init__(
        self,
        outbox: Outbox,
        client: AsyncWebClient,
        run_id: str,
        channel: str,
        thread: str,
        settings: SlackSettings,
        busy: Busy | None = None,
        files: FileSender | None = None,
    ) -> None:
        self.outbox, self.client = outbox, client
        # Uploads the run's own files (entries of kind "files"), once.
        self.files = files
        self.run_id, self.channel, self.thread = run_id, channel, thread
        self.retry_max_s = settings.outbox_retry_max_s
        self.max_age_s = settings.outbox_max_age_s
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
                log.exception("the Slack outbox of %s failed; retrying", self.run_id)
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
        try:
            async with self._calling():
                response = await self._send(entry, status)
        except Exception as exc:
            failure = classify(exc)
            uploading = entry.kind in ("upload", "files")
            if failure.retry and not (
                uploading and failure.answered and self.failures + 1 >= UPLOAD_TRIES
            ):
                return self._retry(entry.what, failure)
            log.error(
                "run %s: Slack refused the %s (%s); %s",
                self.run_id,
                entry.what,
                failure.why,
                "posting its fallback" if entry.instead else "dropped",
            )
            await self._give_up(entry, raw, status)
            return 0.0
        self._delivered(entry.what)
        if entry.kind == "status":
            await self.outbox.sent(self.run_id, raw, ts=response["ts"], version=status.version)
        elif entry.then:
            await self.outbox.replace(self.run_id, raw, entry.then)
        else:
            await self.outbox.sent(self.run_id, raw)
        # Only once the entry is gone: a crash before this finds the upload done.
        await self._forget(entry)
        return 0.0

    async def _send(self, entry: Entry, status: Status) -> Any:
        channel, thread = self.channel, self.thread
        if entry.kind == "files":
            if self.files is None:
                raise RuntimeError("this courier cannot upload the run's files")
            return await self.files.send(entry, channel, thread)
        if entry.kind == "upload":
            file = entry.file or {}
            return await self.client.files_upload_v2(
                channel=channel,
                thread_ts=thread,
                content=file.get("content"),
                filename=file.get("filename"),
                title=file.get("title"),
            )
        text, blocks = (
            (status.text, status.blocks)
            if entry.kind == "status"
            else (
                entry.text,
                entry.blocks,
            )
        )
        # blocks=None: the SDK leaves them out (a plain post).
        return await self.client.chat_postMessage(
            channel=channel, thread_ts=thread, text=text, blocks=blocks
        )

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
                await self.client.chat_update(
                    channel=self.channel, ts=status.ts, text=status.text, blocks=status.blocks
                )
        except Exception as exc:
            failure = classify(exc)
            if failure.retry:
                return self._retry("status message's update", failure)
            log.error("run %s: Slack refused the status update (%s)", self.run_id, failure.why)
            self.failures = 0
        else:
            self._delivered("status message's update")
        await self.outbox.shown(self.run_id, status.version)
        return 0.0

    async def _forget(self, entry: Entry) -> None:
        if entry.kind == "files" and self.files is not None:
            await self.files.forget(entry)

    async def _give_up(self, entry: Entry, raw: str, status: Status) -> None:
        self.failures = 0
        if entry.kind == "status":  # never posted: its updates cannot be shown either
            await self.outbox.sent(self.run_id, raw, ts=GONE, version=status.version)
        else:
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
            "run %s: the %s did not reach Slack (%s); try %d again in %.1f s",
            self.run_id,
            what,
            failure.why,
            self.failures + 1,
            delay,
        )
        return delay

    def _delivered(self, what: str) -> None:
        if self.failures:
            tries = self.failures + 1
            log.info("run %s: the %s reached Slack after %d tries", self.run_id, what, tries)
        self.failures = 0

    def _lost(self, what: str, age: float, text: str) -> None:
        log.error(
            "run %s: the %s was not delivered to Slack within slack.outbox_max_age_s "
            "(%.0f s, queued %.0f s ago); dropped: %.200r",
            self.run_id,
            what,
            self.max_age_s,
            age,
            text,
        )

    @contextlib.asynccontextmanager
    async def _calling(self) -> AsyncIterator[None]:
        """A stopping bot waits (a little) for a call under way rather than cut it off:
        a call cut off after Slack did it is made again by the next courier."""
        key = f"{self.run_id}:courier"
        if self.busy is not None:
            self.busy.add(key)
        try:
            yield
        finally:
            if self.busy is not None:
                self.busy.discard(key)
