"""A message redrawn after a click (``bots.chat.redraw``), on fakeredis with the fake
transport: tried again while the platform fails, in order, nothing left queued once
shown; and a bot that stops leaves an undelivered redraw queued in Redis."""

from __future__ import annotations

import asyncio

import fakeredis

from bots.chat.outbox import Outbox
from bots.chat.ports import Place, Rendered
from bots.chat.redraw import Redraws, queue_of
from bots.chat.store import ChatStore
from tests.fakes.chat import Thread, Transient, fake_adapter

PLACE = Place("c1", "t1")


def _parts() -> tuple[Redraws, Thread, Outbox, list[BaseException]]:
    thread = Thread(messages={"card": "Approve / Edit / Reject"})
    adapter, transport = fake_adapter(thread)
    store = ChatStore(fakeredis.FakeAsyncRedis(decode_responses=True), "t", "fake")
    outbox = Outbox(store)
    return Redraws(outbox, adapter), thread, outbox, transport.failing


async def test_a_redraw_is_tried_again_until_the_platform_takes_it() -> None:
    redraws, thread, outbox, failing = _parts()
    failing.extend([Transient("down"), Transient("still down")])
    await redraws.redraw("run_1", PLACE, "card", Rendered("Approved by Ana."), "decided card")
    assert thread.messages["card"] == "Approved by Ana."
    assert [call for call, _ in thread.calls] == ["update"] * 3
    assert (await outbox.head(queue_of("run_1"))).idle, "nothing left queued"


async def test_redraws_of_one_run_keep_their_order() -> None:
    redraws, thread, _, failing = _parts()
    failing.append(Transient("down"))
    edited = redraws.redraw("run_1", PLACE, "card", Rendered("Edited by Ana."), "edited card")
    decided = redraws.redraw("run_1", PLACE, "card", Rendered("Approved by Bo."), "card")
    await asyncio.gather(edited, decided)
    assert thread.messages["card"] == "Approved by Bo."
    shown = [text for call, text in thread.calls if call == "update"]
    assert shown[-1] == "Approved by Bo." and "Edited by Ana." in shown


async def test_a_stopping_bot_leaves_the_redraw_queued() -> None:
    redraws, thread, outbox, failing = _parts()
    failing.extend([Transient("down")] * 1000)
    drawing = asyncio.create_task(
        redraws.redraw("run_1", PLACE, "card", Rendered("Approved by Ana."), "decided card")
    )
    for _ in range(200):
        if thread.calls:
            break
        await asyncio.sleep(0.01)
    await redraws.aclose()
    await asyncio.wait_for(drawing, 2)
    head = await outbox.head(queue_of("run_1"))
    assert head.entry is not None and head.entry.message == "card"
    assert thread.messages["card"] == "Approve / Edit / Reject"


async def test_a_bot_stopping_while_it_claims_the_queue_starts_no_courier() -> None:
    """The bot stops between the redraw queued and its queue claimed (the click's work
    still under way): no courier starts after the stop, none is left trying forever, and
    the redraw stays queued for the next process."""
    redraws, thread, outbox, failing = _parts()
    failing.extend([Transient("down")] * 1000)
    claim, claiming = redraws.store.claim, asyncio.Event()

    async def slow_claim(*args: object) -> object:
        claiming.set()
        await asyncio.sleep(0.05)  # aclose runs meanwhile
        return await claim(*args)  # type: ignore[arg-type]

    redraws.store.claim = slow_claim  # type: ignore[method-assign,assignment]
    drawing = asyncio.create_task(
        redraws.redraw("run_1", PLACE, "card", Rendered("Approved by Ana."), "decided card")
    )
    await claiming.wait()
    await redraws.aclose()
    await asyncio.wait_for(drawing, 2)
    assert not redraws.tasks and thread.calls == []
    head = await outbox.head(queue_of("run_1"))
    assert head.entry is not None and head.entry.message == "card"


async def test_a_redraw_left_queued_is_delivered_once_by_the_next_processes() -> None:
    """A bot stops mid-outage with a redraw queued; two processes start: whichever takes
    the queue's lease delivers it, once, and nothing is left noted or queued."""
    redraws, thread, outbox, failing = _parts()
    failing.extend([Transient("down")] * 1000)
    drawing = asyncio.create_task(
        redraws.redraw("run_1", PLACE, "card", Rendered("Approved by Ana."), "decided card")
    )
    for _ in range(200):
        if thread.calls:
            break
        await asyncio.sleep(0.01)
    await redraws.aclose()
    await asyncio.wait_for(drawing, 2)
    failing.clear()  # the platform is back
    thread.calls.clear()
    later = [Redraws(outbox, fake_adapter(thread)[0], owner=f"p{i}") for i in (1, 2)]
    assert [await r.adopt() for r in later] == [1, 1]
    for _ in range(200):
        if not any(r.tasks for r in later):
            break
        await asyncio.sleep(0.01)
    assert thread.messages["card"] == "Approved by Ana."
    assert [call for call, _ in thread.calls] == ["update"], "delivered once"
    assert (await outbox.head(queue_of("run_1"))).idle
    assert await outbox.store.progress(outbox.store.keys.redraws) == {}, "nothing noted"
    assert await later[0].adopt() == 0
    for r in later:
        await r.aclose()
