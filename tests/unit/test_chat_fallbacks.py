"""A message the platform refuses is shown another way, never silently dropped
(``bots.chat.fallbacks``): once more, posted anew (an edit refused), as plain text (its
payload refused), in the channel (its thread gone); dropped only when every way is
refused, with an ERROR and a note in the platform's drops. On the in-memory platform."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

import fakeredis
import pytest

from bots.chat import courier as courier_module
from bots.chat.courier import Courier
from bots.chat.outbox import Entry, Outbox
from bots.chat.ports import Adapter, Place, Rendered
from bots.chat.store import ChatStore
from tests.fakes.chat import Refused, Thread, Transient, fake_adapter

PLACE = Place("C1", "T1")
RUN = "run_fallbacks"


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(courier_module, "FIRST_RETRY_S", 0.001)


@pytest.fixture
async def redis() -> AsyncIterator[Any]:
    client = fakeredis.FakeAsyncRedis(decode_responses=True)
    yield client
    await client.aclose()


class Run:
    """One run's outbox and its courier on the in-memory platform."""

    def __init__(self, redis: Any, adapter: Adapter) -> None:
        self.store = ChatStore(redis, "t", adapter.platform)
        self.outbox = Outbox(self.store)
        self.courier = Courier(self.outbox, adapter, RUN, PLACE)

    async def deliver(self, entries: Sequence[Entry] = (), status: str | None = None) -> None:
        shown = None if status is None else Rendered(status, {"kind": "status"})
        await self.outbox.add(RUN, entries, shown)
        done = asyncio.Event()
        done.set()
        await self.courier.run(done)
        assert (await self.outbox.head(RUN)).idle


def post(text: str, what: str = "milestone") -> Entry:
    return Entry(run=RUN, what=what, text=text, payload={"buttons": True})


STATUS = Entry(run=RUN, what="status message", kind="status")


def said(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level]


async def test_a_status_message_refused_once_is_posted_all_the_same(
    redis: Any, caplog: pytest.LogCaptureFixture
) -> None:
    thread = Thread()
    adapter, transport = fake_adapter(thread)
    run = Run(redis, adapter)
    transport.failing = [Refused("channel_not_found")]
    with caplog.at_level(logging.WARNING):
        await run.deliver([STATUS], status="status: 1")
    assert thread.messages == {"m1": "status: 1"}, "posted as rendered on the second try"
    assert thread.payloads["m1"] == {"kind": "status"}
    (warning,) = said(caplog, logging.WARNING)
    assert RUN in warning and "channel_not_found" in warning and "once more" in warning
    assert said(caplog, logging.ERROR) == []

    await run.deliver(status="status: 2")
    assert thread.messages == {"m1": "status: 2"}, "its updates go on in place"


async def test_a_payload_refused_for_good_goes_as_plain_text(
    redis: Any, caplog: pytest.LogCaptureFixture
) -> None:
    thread = Thread()
    adapter, transport = fake_adapter(thread)
    transport.failing = [Refused("invalid_blocks")] * 2
    with caplog.at_level(logging.WARNING):
        await Run(redis, adapter).deliver([post("milestone: fares")])
    assert thread.texts == ["milestone: fares"]
    assert thread.payloads == {"m1": None}, "without the payload the platform refused"
    assert thread.places["m1"] == PLACE
    assert [w.rsplit("; ", 1)[1] for w in said(caplog, logging.WARNING)] == [
        "trying it once more",
        "trying it as plain text",
    ]


async def test_a_status_edit_refused_for_good_is_posted_anew_and_edited_there(
    redis: Any, caplog: pytest.LogCaptureFixture
) -> None:
    thread = Thread()
    adapter, transport = fake_adapter(thread)
    run = Run(redis, adapter)
    await run.deliver([STATUS], status="status: 1")
    transport.failing = [Refused("message_not_found")] * 2
    with caplog.at_level(logging.WARNING):
        await run.deliver(status="status: 2")
    assert thread.messages == {"m1": "status: 1", "m2": "status: 2"}
    assert thread.payloads["m2"] == {"kind": "status"}, "posted anew as rendered"
    assert "trying it posted anew" in said(caplog, logging.WARNING)[-1]

    await run.deliver(status="status: 3")
    assert thread.messages == {"m1": "status: 1", "m2": "status: 3"}, "the new one is edited"
    assert thread.calls[-1] == ("update", "status: 3")


async def test_a_thread_gone_moves_the_runs_posts_to_the_channel(redis: Any) -> None:
    thread = Thread()
    adapter, transport = fake_adapter(thread)
    run = Run(redis, adapter)
    transport.failing = [Refused("thread_not_found")] * 3  # rendered, once more, plain
    await run.deliver([post("milestone: fares")])
    assert thread.places["m1"] == Place("C1", ""), "in the channel, outside the thread"
    await run.deliver([post("milestone: trains")])
    assert thread.places["m2"] == Place("C1", ""), "the run's later posts follow it there"
    assert thread.texts == ["milestone: fares", "milestone: trains"]


async def test_a_message_refused_every_way_is_dropped_loudly(
    redis: Any, caplog: pytest.LogCaptureFixture
) -> None:
    thread = Thread()
    adapter, transport = fake_adapter(thread)
    run = Run(redis, adapter)
    transport.failing = [Refused("channel_not_found")] * 4
    with caplog.at_level(logging.WARNING):
        await run.deliver([post("milestone: fares"), post("milestone: trains")])
    assert [c for c, _ in thread.calls] == ["post"] * 5, "four ways, then the next post"
    assert thread.texts == ["milestone: trains"]
    (error,) = said(caplog, logging.ERROR)
    assert RUN in error and "in every way" in error and "channel_not_found" in error
    assert "milestone: fares" in error
    (drop,) = await run.store.drops()
    assert drop["run"] == RUN and drop["what"] == "milestone"
    assert "channel_not_found" in drop["why"]


async def test_a_platform_out_of_reach_is_waited_for_not_worked_around(redis: Any) -> None:
    thread = Thread()
    adapter, transport = fake_adapter(thread)
    transport.failing = [Transient("503")] * 3
    await Run(redis, adapter).deliver([post("milestone: fares")])
    assert thread.payloads == {"m1": {"buttons": True}}, "as rendered, in the thread"
    assert thread.places["m1"] == PLACE


async def test_a_post_with_its_own_fallback_uses_it(redis: Any) -> None:
    thread = Thread()
    adapter, transport = fake_adapter(thread)
    sorry = Entry(run=RUN, what="note", text="I could not post the proposal here")
    card = Entry(run=RUN, what="proposal card", text="card", payload={}, instead=(sorry,))
    transport.failing = [Refused("invalid_blocks")]
    await Run(redis, adapter).deliver([card])
    assert thread.texts == ["I could not post the proposal here"]


async def test_a_status_message_refused_every_way_is_given_up_once(
    redis: Any, caplog: pytest.LogCaptureFixture
) -> None:
    thread = Thread()
    adapter, transport = fake_adapter(thread)
    run = Run(redis, adapter)
    await run.deliver([STATUS], status="status: 1")
    transport.failing = [Refused("channel_not_found")] * 5  # edit ×2, anew, plain, channel
    with caplog.at_level(logging.ERROR):
        await run.deliver(status="status: 2")
    assert len(said(caplog, logging.ERROR)) == 1
    await run.deliver(status="status: 3")
    assert len(thread.calls) == 6, "not tried again for every new content"
    assert len(await run.store.drops()) == 1
