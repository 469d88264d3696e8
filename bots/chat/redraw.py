"""A message redrawn after a person acted — the proposal card once approved, rejected or
edited (its buttons gone once decided), a budget pause once extended or stopped —
through an outbox, like everything else the bot changes: queued durably in Redis (an
``update`` entry of ``bots.chat.outbox``) and delivered by a courier
(``bots.chat.courier``) that retries while the platform is unreachable, so a redraw
during an outage arrives once the platform is back instead of being lost (and a decided
card keeping live buttons).

Redraws of a run have an outbox of their own (``<run id>:redraws``) beside the relay's:
a rejected or stopped run's relay ends at once and takes its outbox with it, while its
card still has to be redrawn; the card is only ever updated by its redraws, which keep
their order. Each queued outbox is noted with its place (``ChatStore.queue_redraw``)
until it is empty, and delivered by the one process holding its lease (as the relays'
runs): this process's courier right away; one left by a process that stopped (or died,
once its lease lapsed) is taken up by the next process's :meth:`Redraws.adopt`, which
``bots.chat.relays.Relays`` calls when it starts and at every adoption round.

Adapters call :meth:`Redraws.redraw` with what their renderer made; they never call the
platform's update themselves.

May call: ``bots.chat`` (courier, outbox, store, ports).
"""

from __future__ import annotations

import asyncio
import json
import logging

from bots.chat.courier import Courier
from bots.chat.outbox import Entry, Outbox
from bots.chat.ports import Adapter, Place, Rendered
from bots.chat.store import Lease

log = logging.getLogger(__name__)


def queue_of(run_id: str) -> str:
    """The outbox of ``run_id``'s redraws (under the platform's outbox keys)."""
    return f"{run_id}:redraws"


class Redraws:
    """One platform's redraws: queued in ``outbox``, delivered with ``adapter`` by the
    process holding each queue's lease (``owner``: this process, as the relays name it)."""

    def __init__(self, outbox: Outbox, adapter: Adapter, owner: str = "") -> None:
        self.outbox, self.adapter, self.store = outbox, adapter, outbox.store
        self.owner = owner or f"redraws-{id(self)}"
        self.lease_s = adapter.limits.relay_lease_s
        self.locks: dict[str, asyncio.Lock] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        # This process's lease on each queue it delivers (renewed by the relays).
        self.leases: dict[str, Lease] = {}
        self.closed = False

    async def redraw(
        self, run_id: str, place: Place, message_id: str, message: Rendered, what: str
    ) -> None:
        """Show ``message`` in message ``message_id`` of ``place`` (``what`` names it in
        the log: "decided card", "decided pause"); returns once it is shown, given up,
        left to the process delivering this run's redraws, or this process stops
        (:meth:`aclose`: it stays queued for the next)."""
        queue = queue_of(run_id)
        entry = Entry(
            run=run_id,
            what=what,
            kind="update",
            message=message_id,
            text=message.text,
            payload=message.payload,
        )
        where = json.dumps({"channel": place.channel, "thread": place.thread})
        await self.store.queue_redraw(queue, entry.model_dump_json(), where)
        await self.deliver(queue, place)

    async def deliver(self, queue: str, place: Place) -> None:
        """Deliver what ``queue`` holds if this process may (it holds the queue's lease)."""
        if self.closed:
            return
        lock = self.locks.setdefault(queue, asyncio.Lock())
        async with lock:  # one courier per queue here: the redraws keep their order
            lease = await self.store.claim(queue, self.owner, self.lease_s)
            if lease is None:  # another process delivers it (or will, once it lapses)
                return
            self.leases[queue] = lease
            try:
                if await self._courier(queue, place):
                    await self.store.redraws_done(queue)
            finally:
                self.leases.pop(queue, None)
                await self.store.release(lease)
        if not lock.locked():
            self.locks.pop(queue, None)

    async def _courier(self, queue: str, place: Place) -> bool:
        """Run a courier over ``queue`` until it is empty; whether it got there (not
        stopped by :meth:`aclose`)."""
        if self.closed:  # closed while this process claimed the queue: it stays queued
            return False
        ended = asyncio.Event()
        ended.set()  # deliver what is queued, then stop
        courier = Courier(self.outbox, self.adapter, queue, place)
        task = asyncio.create_task(courier.run(ended), name=f"redraw-{queue}")
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        await asyncio.wait([task])
        return not task.cancelled() and task.exception() is None

    async def adopt(self) -> int:
        """Take up the redraws an earlier (or a dead) process left queued: each delivered
        in the background by whichever process gets its lease; how many were seen."""
        if self.closed:
            return 0
        left = await self.store.progress(self.store.keys.redraws)
        for queue, where in left.items():
            if queue in self.locks:  # delivered (or waited for) here already
                continue
            place = Place(**json.loads(where))
            task = asyncio.create_task(self.deliver(queue, place), name=f"adopt-{queue}")
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        return len(left)

    async def renew(self) -> None:
        """Keep this process's leases on the queues it delivers (a lapsed one: its
        courier stops and the process now holding it delivers the rest)."""
        leases = dict(self.leases)
        for queue in await self.store.renew(leases):
            log.warning("the redraws of %s are delivered by another process now", queue)
            for task in list(self.tasks):
                if task.get_name() == f"redraw-{queue}":
                    task.cancel()

    async def aclose(self) -> None:
        """Stop delivering (what is left stays queued in Redis, and its leases go)."""
        self.closed = True
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.wait(list(self.tasks))
