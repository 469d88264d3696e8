"""Following one run into its thread: the relay folds the run's events into its outbox
(``bots.chat.relay``) while the run's courier delivers it (``bots.chat.courier``), from the
run's request to its end, resumed where an earlier bot process stopped."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from bots.chat.busy import Busy, stop_if_cancelled
from bots.chat.courier import Courier
from bots.chat.outbox import Outbox
from bots.chat.ports import Adapter
from bots.chat.relay import ThreadRelay
from bots.chat.streams import Streamer
from bots.chat.threads import Shown, Threads, after
from core.services import Services
from core.state.event_hub import EventHub

log = logging.getLogger(__name__)


async def relay_run(
    svc: Services,
    hub: EventHub,
    threads: Threads,
    outbox: Outbox,
    adapter: Adapter,
    shown: Shown,
    busy: Busy | None = None,
) -> None:
    """Follow ``shown.run_id`` from its request to its end, relaying into its thread
    (the proposal card included), and deliver its outbox until it is empty.

    Events up to ``shown.last`` were relayed before (by a bot process that stopped): they
    only rebuild the relay's state, while the courier delivers what that process left in
    the outbox. What an event posts is queued in the transaction that saves the relay's
    progress, so it is queued once. While an event is being queued, the run id is in
    ``busy`` (a stopping bot waits for it).
    """
    busy = Busy() if busy is None else busy
    run_id, place = shown.run_id, shown.place
    streams = isinstance(adapter.transport, Streamer)
    relay = ThreadRelay(place, run_id, adapter.renderer, adapter.limits, svc=svc, streams=streams)
    courier = Courier(outbox, adapter, run_id, place, busy)
    if shown.status_ts:
        await outbox.keep_ts(run_id, shown.status_ts)

    async def commit(last: str) -> None:
        nonlocal shown
        entries, status = relay.take()
        if not entries and status is None:
            return  # a replayed event that posted nothing posts nothing either
        shown = shown.model_copy(update={"last": last})
        await outbox.add(run_id, entries, status, progress=shown.model_dump_json())
        courier.wake.set()

    ended = asyncio.Event()
    name = f"{adapter.platform}-outbox-{run_id}"
    delivering = asyncio.create_task(courier.run(ended), name=name)
    try:
        try:
            # aclosing: a relay stopped between two events (cancelled: its lease lapsed)
            # stops following at once, not when the generator is collected, which could
            # be after the relay that takes the run up again started following it.
            async with contextlib.aclosing(hub.follow(run_id)) as events:
                async for entry_id, event in events:
                    busy.add(run_id)
                    try:
                        relay.quiet = not after(entry_id, shown.last)
                        await relay.on_event(event)
                        relay.show_status()
                        await commit(entry_id)
                    finally:
                        busy.discard(run_id)
                    stop_if_cancelled()  # a cancel swallowed by Redis: not wait for the next
            relay.quiet = False
            relay.show_status(force=True)
            await commit(shown.last)
        except Exception:
            # Not marked done: the bot takes the run up again from the last event queued.
            log.exception("following run %s failed; it will be taken up again", run_id)
            return
        ended.set()
        courier.wake.set()
        await delivering
        await threads.store.relay_over(run_id)
    finally:
        delivering.cancel()
        await asyncio.gather(delivering, return_exceptions=True)
