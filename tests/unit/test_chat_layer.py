"""The shared chat layer on an in-memory platform (``tests.fakes.chat``; no Slack): posts
arrive in the order of the run's events, failures the platform calls transient are tried
again, refusals fall back, the status message is coalesced, and a relay taken up again
after its bot process stopped posts nothing twice."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import fakeredis
import pytest

from bots.chat import courier as courier_module
from bots.chat.courier import Courier
from bots.chat.follow import relay_run
from bots.chat.outbox import Entry, Outbox
from bots.chat.ports import Adapter, Place
from bots.chat.relay import ThreadRelay
from bots.chat.store import ChatStore
from bots.chat.threads import Shown, Threads
from core.config import Settings
from core.llm.scripted import ScriptedModel
from core.state.event_hub import EventHub
from core.types.agent import EndReason
from core.types.events import (
    AgentCreated,
    AgentFinished,
    ChatPosted,
    Notified,
    RunEvent,
    RunFinished,
    RunStarted,
    ToolCalled,
)
from core.types.run import RunState, RunStatus
from tests.fakes.chat import Refused, Thread, Transient, fake_adapter

PLACE = Place("C1", "T1")
RUN = "run_chat"


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(courier_module, "FIRST_RETRY_S", 0.001)


@pytest.fixture
async def redis() -> AsyncIterator[Any]:
    client = fakeredis.FakeAsyncRedis(decode_responses=True)
    yield client
    await client.aclose()


class Relayed:
    """A relay whose posts go through the run's outbox and are delivered by a courier."""

    def __init__(self, redis: Any, adapter: Adapter) -> None:
        self.redis = redis
        self.relay = ThreadRelay(PLACE, RUN, adapter.renderer, adapter.limits)
        self.outbox = Outbox(ChatStore(redis, "t", adapter.platform))
        self.courier = Courier(self.outbox, adapter, RUN, PLACE)

    async def on_events(self, *events: RunEvent) -> None:
        """Fold ``events`` in, queue their posts (the status at most once per interval),
        and return once they are delivered."""
        for event in events:
            await self.relay.on_event(event)
            # As relay_run: the run's end is shown at once.
            self.relay.show_status(force=isinstance(event, RunFinished))
            entries, status = self.relay.take()
            await self.outbox.add(RUN, entries, status)
        done = asyncio.Event()
        done.set()
        await self.courier.run(done)


def team() -> list[RunEvent]:
    """A run of a lead with two members: created, working, finished."""
    return [
        RunStarted(run_id=RUN, task="t"),
        AgentCreated(run_id=RUN, agent_id="lead", name="Lead", role="lead", model="m"),
        *(
            AgentCreated(
                run_id=RUN, agent_id=a, name=a.title(), role="member", parent_id="lead", model="m"
            )
            for a in ("ana", "bo")
        ),
        ToolCalled(
            run_id=RUN, agent_id="ana", seq=1, tool="calc", arguments="", ok=True, result=""
        ),
        AgentFinished(run_id=RUN, agent_id="ana", reason=EndReason.FINISHED, result="fares"),
        AgentFinished(run_id=RUN, agent_id="bo", reason=EndReason.FINISHED, result="trains"),
    ]


def end(result: str = "49 EUR") -> RunFinished:
    return RunFinished(run_id=RUN, status=RunStatus.COMPLETED, result=result, tokens=12_345)


async def test_posts_arrive_in_order_and_the_status_shows_the_end(redis: Any) -> None:
    thread = Thread()
    adapter, _ = fake_adapter(thread)
    relayed = Relayed(redis, adapter)
    await relayed.on_events(*team(), end())
    status, *posts = thread.texts
    assert status.startswith("status:") and "'phase': 'ended'" in status, "updated in place"
    assert posts == ["milestone: fares", "milestone: trains", "result: 49 EUR"]
    assert [what for what, _ in thread.calls][:1] == ["post"], "the status message first"
    assert (await relayed.outbox.head(RUN)).idle


async def test_the_status_message_is_coalesced_within_the_interval(redis: Any) -> None:
    thread = Thread()
    adapter, _ = fake_adapter(thread, status_interval_s=60)
    relayed = Relayed(redis, adapter)
    calls = [
        ToolCalled(run_id=RUN, agent_id="a", seq=i, tool="calc", arguments="", ok=True, result="")
        for i in range(30)
    ]
    await relayed.on_events(RunStarted(run_id=RUN, task="t"), *calls)
    status = (await relayed.outbox.head(RUN)).status
    assert status.version == 1, "30 tool calls within the interval: no new content"
    assert [what for what, _ in thread.calls] == ["post"]
    relayed.relay.show_status(force=True)  # the run's end forces it
    _, content = relayed.relay.take()
    assert content is not None and "'tool_calls': 30" in content.text


async def test_a_transient_failure_is_tried_again(redis: Any) -> None:
    thread = Thread()
    adapter, transport = fake_adapter(thread)
    relayed = Relayed(redis, adapter)
    transport.failing = [Transient("down"), Transient("still down")]
    await relayed.on_events(end("Paris."))
    assert thread.calls == [("post", "result: Paris.")] * 3
    assert thread.texts == ["result: Paris."], "delivered once"


async def test_a_refused_upload_falls_back_and_a_stale_post_is_dropped(
    redis: Any, caplog: pytest.LogCaptureFixture
) -> None:
    thread = Thread()
    adapter, transport = fake_adapter(thread, result_file_chars=150)
    relayed = Relayed(redis, adapter)
    transport.failing = [Refused("no files here")]
    long = "x" * 250
    with caplog.at_level(logging.WARNING):
        await relayed.on_events(end(long))
    (refused,) = [r for r in caplog.records if "Fake refused the result file" in r.message]
    assert refused.levelno == logging.WARNING, "a fallback is posted: a warning, not an error"
    assert thread.files == [], "the upload was refused"
    assert "".join(thread.texts) == "result: " + long, "the whole text, in pieces"
    assert len(thread.texts) == 3

    old = Entry(run=RUN, what="milestone", text="late", at=time.time() - 100_000)
    await relayed.outbox.add(RUN, [old])
    with caplog.at_level(logging.ERROR):
        await relayed.on_events()
    assert "was not delivered to Fake within outbox_max_age_s" in caplog.text
    assert "late" not in thread.texts


async def test_posts_queued_as_the_relay_ends_are_delivered(redis: Any) -> None:
    """The courier's read of the outbox answered late (a loaded machine): meanwhile the
    relay queued the run's result and ended. Before, the courier took the stale empty read
    with the end for "all delivered" and stopped; the outbox went with the relay and the
    thread never got the result (its last message a member's "finished" line)."""
    thread = Thread()
    adapter, _ = fake_adapter(thread)
    outbox = Outbox(ChatStore(redis, "t", adapter.platform))
    courier = Courier(outbox, adapter, RUN, PLACE)
    ended = asyncio.Event()
    relay = ThreadRelay(PLACE, RUN, adapter.renderer, adapter.limits)
    read = outbox.head

    async def late_read(run_id: str) -> Any:
        head = await read(run_id)
        if not ended.is_set():  # the relay, while the reply is on its way
            await relay.on_event(end("Best: 49"))
            await outbox.add(RUN, relay.take()[0])
            ended.set()
            courier.wake.set()
        return head

    outbox.head = late_read  # type: ignore[method-assign]
    await asyncio.wait_for(courier.run(ended), 5)
    assert thread.texts == ["result: Best: 49"]


async def test_a_long_result_goes_up_as_a_file_with_a_preview(redis: Any) -> None:
    thread = Thread()
    adapter, _ = fake_adapter(thread, result_file_chars=150)
    await Relayed(redis, adapter).on_events(end("y" * 250))
    assert thread.files == [f"result-{RUN}.md"]
    (preview,) = thread.texts
    assert preview.startswith("result: yyy")


async def test_a_relay_taken_up_again_posts_nothing_twice(make_services: Any) -> None:
    """Bot process 1 relays the run until the platform fails on its second milestone and
    the process stops; process 2 takes the run up from Redis (the relay's progress, the
    outbox) and delivers the rest: every post once, in order, and the status updated."""
    svc = make_services(Settings(), ScriptedModel(), start=False)
    await svc.store.create_run(RunState(id=RUN, task="t", status=RunStatus.RUNNING))
    threads = Threads(ChatStore.of(svc, "fake"))
    await threads.link(Shown(run_id=RUN, channel=PLACE.channel, thread=PLACE.thread))
    thread = Thread()
    first, transport = fake_adapter(thread)
    outbox = Outbox(ChatStore.of(svc, "fake"))
    hub = EventHub(svc.store, blocking=False)
    *started, ana, bo = team()
    await svc.store.emit(*started, ana)
    (shown,) = await threads.unfinished()
    one = asyncio.create_task(relay_run(svc, hub, threads, outbox, first, shown))
    await _until(lambda: "milestone: fares" in thread.texts)
    transport.failing = [Transient("down")] * 1000
    await svc.store.emit(bo)
    await _until(lambda: ("post", "milestone: trains") in thread.calls)
    one.cancel()  # the process stops with "trains" in the outbox
    await asyncio.gather(one, return_exceptions=True)
    await hub.aclose()

    await svc.store.emit(end())
    second, _ = fake_adapter(thread)
    (shown,) = await threads.unfinished()
    assert shown.last != "0-0", "how far process 1 got is kept"
    hub = EventHub(svc.store, blocking=False)
    await asyncio.wait_for(relay_run(svc, hub, threads, outbox, second, shown), 10)
    await hub.aclose()
    status, *posts = thread.texts
    assert posts == ["milestone: fares", "milestone: trains", "result: 49 EUR"]
    assert "'phase': 'ended'" in status
    assert await threads.unfinished() == [], "the relay is done and its outbox gone"


async def _until(check: Any, timeout_s: float = 5) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "not in time"
        await asyncio.sleep(0.01)


def three_agents() -> list[RunEvent]:
    """An orchestrator, a lead under it and a member under the lead; the lead passes its
    member's result up as it is, the orchestrator answers with its own words."""
    agents = (("orch", "Orchestrator", None), ("lead", "Lead", "orch"), ("ana", "Ana", "lead"))
    return [
        RunStarted(run_id=RUN, task="t"),
        *(
            AgentCreated(run_id=RUN, agent_id=a, name=n, role="x", parent_id=p, model="m")
            for a, n, p in agents
        ),
        AgentFinished(run_id=RUN, agent_id="ana", reason=EndReason.FINISHED, result="fares: 49"),
        AgentFinished(run_id=RUN, agent_id="lead", reason=EndReason.FINISHED, result="fares: 49"),
        AgentFinished(run_id=RUN, agent_id="orch", reason=EndReason.FINISHED, result="Best: 49"),
        end("Best: 49"),
    ]


async def test_a_multi_agent_run_posts_each_text_once(redis: Any) -> None:
    """Before: the status message, a milestone per agent (the lead's repeating its
    member's, the orchestrator's repeating the result) and the result: 5 messages. Now
    the agents with agents under them post no milestone of their own: 3."""
    thread = Thread()
    adapter, _ = fake_adapter(thread)
    await Relayed(redis, adapter).on_events(*three_agents())
    status, *posts = thread.texts
    assert status.startswith("status:")
    assert posts == ["milestone: fares: 49", "result: Best: 49"]
    assert len(thread.texts) == 3


async def test_milestones_of_the_same_text_and_leads_that_stop_short(redis: Any) -> None:
    thread = Thread()
    adapter, _ = fake_adapter(thread)
    *started, _, _, _, _ = three_agents()
    same = AgentCreated(run_id=RUN, agent_id="bo", name="Bo", role="x", parent_id="lead", model="m")
    await Relayed(redis, adapter).on_events(
        *started,
        same,
        AgentFinished(run_id=RUN, agent_id="ana", reason=EndReason.FINISHED, result="fares: 49"),
        AgentFinished(run_id=RUN, agent_id="bo", reason=EndReason.FINISHED, result="fares: 49 "),
        AgentFinished(run_id=RUN, agent_id="lead", reason=EndReason.MAX_TURNS, result="half"),
    )
    assert thread.texts[1:] == ["milestone: fares: 49", "milestone: half"], (
        "the same text once; a lead stopped by a limit is news"
    )


def late_judge() -> list[RunEvent]:
    """``three_agents`` with a judge under the orchestrator whose turn was under way when
    the orchestrator finished: the judge's end is written after the run's."""
    *ran, ended = three_agents()
    judge = AgentCreated(
        run_id=RUN, agent_id="judge", name="Judge", role="judge", parent_id="orch", model="m"
    )
    late = AgentFinished(run_id=RUN, agent_id="judge", reason=EndReason.FINISHED, result="ok")
    return [*ran[:4], judge, *ran[4:], ended, late]


async def test_an_agent_that_ends_after_the_run_posts_nothing_below_the_result(
    redis: Any,
) -> None:
    """The result is the thread's last post: the judge's "finished" line, folded after
    the run's end, is not posted under it (nor the status changed)."""
    thread = Thread()
    adapter, _ = fake_adapter(thread)
    relayed = Relayed(redis, adapter)
    await relayed.on_events(*late_judge())
    status, *posts = thread.texts
    assert posts == ["milestone: fares: 49", "result: Best: 49"]
    assert "'finished': 3" in status, "the judge's end counted nowhere"


async def test_a_relayed_run_ends_with_its_result_whatever_ends_after_it(
    make_services: Any,
) -> None:
    """The same run relayed from its event stream, as every platform's relay is: the
    thread ends with the result, and the relay is over."""
    svc = make_services(Settings(), ScriptedModel(), start=False)
    await svc.store.create_run(RunState(id=RUN, task="t", status=RunStatus.RUNNING))
    threads = Threads(ChatStore.of(svc, "fake"))
    await threads.link(Shown(run_id=RUN, channel=PLACE.channel, thread=PLACE.thread))
    await svc.store.emit(*late_judge())
    thread = Thread()
    adapter, _ = fake_adapter(thread)
    hub = EventHub(svc.store, blocking=False)
    (shown,) = await threads.unfinished()
    outbox = Outbox(ChatStore.of(svc, "fake"))
    await asyncio.wait_for(relay_run(svc, hub, threads, outbox, adapter, shown), 10)
    await hub.aclose()
    assert thread.texts[1:] == ["milestone: fares: 49", "result: Best: 49"]
    assert await threads.unfinished() == []


async def test_notifications_and_posts_with_a_file_name(redis: Any) -> None:
    thread = Thread()
    adapter, transport = fake_adapter(thread)
    relayed = Relayed(redis, adapter)
    await relayed.on_events(
        Notified(run_id=RUN, agent_id="a", who="@ana", text="the fares are in"),
        ChatPosted(run_id=RUN, agent_id="a", text="# Fares\n49 EUR", filename="../out/fares.md"),
    )
    assert thread.texts == ["notify: the fares are in"]
    assert thread.files == ["fares.md"], "sent as a file, by its plain name"

    transport.failing = [Refused("no files")]
    await relayed.on_events(ChatPosted(run_id=RUN, agent_id="a", text="plan", filename="p.md"))
    assert thread.texts[-1] == "chat_post: plan", "refused as a file: posted"


async def test_an_outbox_queued_before_the_upgrade_is_delivered(redis: Any) -> None:
    """A Slack outbox written before the chat layer was shared (entries with ``blocks``,
    a result file as a dict) under the same keys: read and delivered as it was."""
    thread = Thread()
    adapter, _ = fake_adapter(thread)
    outbox = Outbox(ChatStore(redis, "t", "slack"))
    assert outbox.store.keys.outbox(RUN) == f"t:slack:outbox:{RUN}", "the keys Slack always had"
    at = time.time()
    empty: dict[str, list[Any]] = {"files": [], "then": [], "instead": []}
    old = [
        {"run": RUN, "what": "milestone", "kind": "post", "text": "fares", "at": at, "id": "a1"}
        | {"blocks": [{"type": "section"}], "file": None}
        | empty,
        {"run": RUN, "what": "result file", "kind": "upload", "text": "", "at": at, "id": "a2"}
        | {"blocks": None, "file": {"content": "x", "filename": "r.md", "title": "Result"}}
        | empty,
    ]
    await redis.rpush("t:slack:outbox:run_chat", *(json.dumps(e) for e in old))
    head = await outbox.head(RUN)
    assert head.entry is not None and head.entry.payload == [{"type": "section"}]
    done = asyncio.Event()
    done.set()
    await Courier(outbox, adapter, RUN, PLACE).run(done)
    assert thread.texts == ["fares"] and thread.files == ["r.md"]
