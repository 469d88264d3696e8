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
their order. This process's courier delivers them right away (one at a time per run).

Adapters call :meth:`Redraws.redraw` with what their renderer made; they never call the
platform's update themselves.
"""

from __future__ import annotations

import asyncio

from bots.chat.courier import Courier
from bots.chat.outbox import Entry, Outbox
from bots.chat.ports import Adapter, Place, Rendered


def queue_of(run_id: str) -> str:
    """The outbox of ``run_id``'s redraws (under the platform's outbox keys)."""
    return f"{run_id}:redraws"


class Redraws:
    """One platform's redraws: queued in ``outbox``, delivered with ``adapter``."""

    def __init__(self, outbox: Outbox, adapter: Adapter) -> None:
        self.outbox, self.adapter = outbox, adapter
        self.locks: dict[str, asyncio.Lock] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    async def redraw(
        self, run_id: str, place: Place, message_id: str, message: Rendered, what: str
    ) -> None:
        """Show ``message`` in message ``message_id`` of ``place`` (``what`` names it in
        the log: "decided card", "decided pause"); returns once it is shown, given up,
        or this process stops (:meth:`aclose`: it stays queued)."""
        queue = queue_of(run_id)
        entry = Entry(
            run=run_id,
            what=what,
            kind="update",
            message=message_id,
            text=message.text,
            payload=message.payload,
        )
        await self.outbox.add(queue, [entry])
        lock = self.locks.setdefault(queue, asyncio.Lock())
        async with lock:  # one courier per queue here: the redraws keep their order
            ended = asyncio.Event()
            ended.set()  # deliver what is queued, then stop
            courier = Courier(self.outbox, self.adapter, queue, place)
            task = asyncio.create_task(courier.run(ended), name=f"redraw-{run_id}")
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
            await asyncio.wait([task])
        if not lock.locked():
            self.locks.pop(queue, None)

    async def aclose(self) -> None:
        """Stop delivering (what is left stays queued in Redis)."""
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.wait(list(self.tasks))
