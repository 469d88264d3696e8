"""A run's Slack thread over time: follow-up replies reach the top agent, a reply to an
ended run gets one private hint, a failed planning says why, and a restarted bot resumes
its relays without posting anything twice."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from typing import Any

import pytest

from core.llm.scripted import Reply, call
from core.types.run import RunStatus
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration.test_slack_http import (
    ANA,
    CHANNEL,
    MALLORY,
    harness,
    planning_settings,
    quick_library,
    responder,
    scripted,
    serve_bot,
)
from tests.planning_helpers import design
from tests.scenarios import texts

pytestmark = pytest.mark.integration
THREAD = "1700000000.000100"


def waiting_orchestrator(request: Any) -> Reply:
    """The orchestrator waits for people's word before it finishes (with that word)."""
    if request.agent_name != "Orchestrator":
        return responder(request)
    said = texts(request, "[Reply from")
    if said:
        return Reply(calls=(call("finish", {"result": f"Done: {said[0].splitlines()[1]}"}),))
    return Reply(calls=(call("wait_for_messages", {}),))


async def test_a_reply_reaches_the_top_agent_and_later_ones_get_one_hint(
    make_services, real_redis
) -> None:
    async with harness(make_services, real_redis) as h:
        h.bot.svc.llm.responder = waiting_orchestrator  # type: ignore[attr-defined]
        await h.mention("Compare flights to Berlin.")
        _, run_id = await h.card()
        await h.click("caramba_approve", run_id, ANA, "1700000000.000200")
        await h.slack.wait_for(
            lambda: any("agents" in c["text"] for c in h.slack.of("chat.postMessage"))
        )

        assert (await h.reply("Trains count too.", event_id="EvFollow")).status_code == 200
        await h.runs_end()
        done = {"channel": CHANNEL, "timestamp": "1700000000.000900", "name": "white_check_mark"}
        assert done in h.slack.of("reactions.add")
        run = await h.bot.svc.store.get_run(run_id)
        assert run.status is RunStatus.COMPLETED and run.result == "Done: Trains count too."

        for i in range(2):
            await h.reply("Thanks!", event_id=f"EvLate{i}")
        # Bolt answers Slack before its listener runs (process_before_response off): under
        # load the replies' work may not be spawned yet when drain() looks.
        await h.slack.wait_for(lambda: bool(h.slack.of("chat.postEphemeral")))
        await h.bot.drain()
        (hint,) = h.slack.of("chat.postEphemeral")
        assert hint["user"] == ANA and "mention me" in hint["text"].lower()


async def test_a_model_that_cannot_plan_is_told_in_the_thread(make_services, real_redis) -> None:
    async with harness(make_services, real_redis, {"no": "agents"}) as h:
        await h.mention("Plan a trip.")
        await h.slack.wait_for(lambda: bool(h.slack.of("chat.postMessage")))
        await h.runs_end()
        said = h.slack.of("chat.postMessage")
        # Said plainly, then one agent answers instead.
        assert said[0]["thread_ts"] == THREAD and "could not design a team" in said[0]["text"]
        assert "Pick a stronger planning model" in said[0]["text"]
        assert said[-1]["text"].startswith("Caramba says:")
        assert h.cards() == []


async def test_a_rate_limited_card_comes_later_and_a_refused_one_is_told(
    make_services, real_redis
) -> None:
    async with harness(make_services, real_redis) as h:
        h.slack.rate_limit("chat.postMessage", times=4)  # the card: a try and 3 retries
        await h.mention("Compare flights to Berlin.")
        await h.slack.wait_for(lambda: len(h.slack.of("chat.postMessage")) == 5)
        tries = h.slack.of("chat.postMessage")
        assert all("caramba_approve" in str(t["blocks"]) for t in tries)
        assert len(h.cards()) == 5, "the outbox tried again once the client's retries ran out"

    async with harness(make_services, real_redis) as h:

        def no_cards(method: str, args: dict[str, Any]) -> str | None:
            return "invalid_blocks" if "caramba_approve" in str(args.get("blocks")) else None

        h.slack.refusing = no_cards
        await h.mention("Compare flights to Berlin.", event_id="Ev2")
        await h.slack.wait_for(lambda: len(h.slack.of("chat.postMessage")) == 2)
        card, said = h.slack.of("chat.postMessage")
        assert "caramba_approve" in str(card["blocks"]), "refused for good: tried once"
        assert said["thread_ts"] == THREAD
        assert said["text"] == ":x: I could not post the proposal here; ask me again."


async def test_a_restarted_bot_resumes_without_posting_twice(make_services, real_redis) -> None:
    slack = await FakeSlackAPI().start()
    s = quick_library(planning_settings(), tempfile.mkdtemp(prefix="caramba-lib-"))
    s = s.model_copy(update={"slack": s.slack.model_copy(update={"api_url": slack.url})})
    svc = make_services(s, scripted(design()), redis=real_redis)
    try:
        async with serve_bot(svc, slack) as h:
            await h.mention("Compare flights to Berlin.")
            _, run_id = await h.card()
        # The bot stopped with the proposal open; a new process takes over.
        async with serve_bot(svc, slack) as h:
            assert await h.bot.start() == 1
            await h.click("caramba_approve", run_id, ANA, "1700000000.000200")
            await h.runs_end()
            assert len(h.cards()) == 1, "the replayed proposal is not posted again"
            posts = h.slack.of("chat.postMessage")
            assert "Orchestrator says: 3 flights" in posts[-1]["text"]
            assert "Run completed" in h.slack.of("chat.update")[-1]["text"]
            assert await h.bot.threads.unfinished() == []
    finally:
        await slack.stop()
        shutil.rmtree(s.library.index_dir, ignore_errors=True)


async def test_an_unauthorised_edit_opens_no_form(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        await h.mention("Compare flights to Berlin.")
        _, run_id = await h.card()
        assert (await h.click("caramba_edit_open", run_id, MALLORY, "1.2")).status_code == 200
        await h.slack.wait_for(lambda: bool(h.slack.of("chat.postEphemeral")))
        (refusal,) = h.slack.of("chat.postEphemeral")
        assert refusal["user"] == MALLORY and "Only" in refusal["text"]
        assert h.slack.of("views.open") == []
        assert (await h.bot.svc.store.get_run(run_id)).status is RunStatus.PROPOSED


async def test_two_bots_relay_each_run_once_and_take_over_a_dead_ones(
    make_services, real_redis
) -> None:
    slack = await FakeSlackAPI().start()
    s = quick_library(planning_settings(), tempfile.mkdtemp(prefix="caramba-lib-"))
    s = s.model_copy(
        update={"slack": s.slack.model_copy(update={"api_url": slack.url, "relay_lease_s": 0.3})}
    )
    svc = make_services(s, scripted(design()), redis=real_redis)
    try:
        async with serve_bot(svc, slack) as a, serve_bot(svc, slack) as b:
            await a.bot.start()
            await b.bot.start()
            await a.mention("Compare flights to Berlin.")
            _, run_id = await a.card()
            assert list(a.bot.relays) == [run_id]
            assert await b.bot.relays.adopt() == 0, "a live bot's run is not taken"

            await asyncio.sleep(0.5)
            assert await b.bot.relays.adopt() == 0, "the lease is renewed while bot a lives"

            # Bot a dies: its relay and lease renewals stop, nothing is released.
            async def dead(*_: Any) -> None:
                return None

            a.bot.threads.release = dead  # type: ignore[method-assign]
            assert a.bot.relays.supervisor is not None
            for task in [a.bot.relays.supervisor, *a.bot.relays.tasks.values()]:
                task.cancel()
            await a.slack.wait_for(lambda: run_id in b.bot.relays, timeout_s=5)

            await b.click("caramba_approve", run_id, ANA, "1700000000.000200")
            await b.runs_end()
            assert len(b.cards()) == 1
            assert "Orchestrator says: 3 flights" in slack.of("chat.postMessage")[-1]["text"]
            updates = [u for u in slack.of("chat.update") if "Run completed" in u["text"]]
            assert len(updates) == 1, "one relay showed the end"
    finally:
        await slack.stop()
        shutil.rmtree(s.library.index_dir, ignore_errors=True)


async def test_a_lease_taken_over_is_reported_to_its_old_holder(any_redis) -> None:
    from bots.chat.store import ChatStore
    from bots.chat.threads import Threads

    threads = Threads(ChatStore(any_redis, getattr(any_redis, "test_prefix", "test"), "slack"))
    a1, a2 = await threads.claim("run_1", "a", 0.2), await threads.claim("run_2", "a", 30)
    assert a1 is not None and a2 is not None
    assert await threads.claim("run_2", "b", 30) is None, "a live lease is not taken"
    await asyncio.sleep(0.3)
    b1 = await threads.claim("run_1", "b", 30)
    assert b1 is not None, "a lapsed lease is"
    assert await threads.renew({"run_1": a1, "run_2": a2}) == ["run_1"]
    assert await threads.holds(b1) and await threads.holds(a2)
    assert not await threads.holds(a1)


async def test_a_renewal_after_a_takeover_does_not_take_the_lease_back(any_redis) -> None:
    """Bot a stalled past its lease and bot b took the run: a's next renewal reports the
    run lost and leaves b's lease as it was (holder and time); a's release leaves it too."""
    from bots.chat.store import ChatStore
    from bots.chat.threads import Threads

    prefix = getattr(any_redis, "test_prefix", "test")
    a, b = (Threads(ChatStore(any_redis, prefix, "slack")) for _ in range(2))
    mine = await a.claim("run_1", "a", 0.2)
    assert mine is not None
    await asyncio.sleep(0.3)
    theirs = await b.claim("run_1", "b", 5)
    assert theirs is not None
    key = f"{prefix}:slack:lease:run_1"
    assert await a.renew({"run_1": mine}) == ["run_1"]
    assert await any_redis.get(key) == "b", "the renewal did not overwrite b's lease"
    assert 0 < await any_redis.pttl(key) <= 5000, "nor b's time (a's was 0.2 s)"
    await a.release(mine)
    assert await b.holds(theirs) and not await a.holds(mine)
    assert await b.renew({"run_1": theirs}) == []
    await b.release(theirs)
    assert await any_redis.get(key) is None
    assert await a.claim("run_1", "a", 30) is not None, "a released run is free"


async def test_a_takeover_during_a_renewal_is_not_undone(real_redis, monkeypatch) -> None:
    """The bug the leases had: a renewal read the holder, then wrote the lease back in a
    second call, so a process that took the lapsed lease in between lost it again (and
    two processes relayed the run). Here bot b takes the lease over right after bot a's
    first Redis call of a renewal: b keeps it, and a's next renewal reports it lost."""
    from bots.chat.store import ChatStore
    from bots.chat.threads import Threads

    threads = Threads(ChatStore(real_redis, real_redis.test_prefix, "slack"))
    key = f"{real_redis.test_prefix}:slack:lease:run_1"
    mine = await threads.claim("run_1", "a", 30)
    assert mine is not None
    pool = real_redis.connection_pool
    release = pool.release
    theirs: list[Any] = []

    async def then_b_takes_over(connection: Any) -> None:
        await release(connection)
        if theirs:
            return  # once (and not during b's own calls)
        theirs.append(None)
        await real_redis.delete(key)  # a stalled past its lease
        theirs.append(await threads.claim("run_1", "b", 30))

    monkeypatch.setattr(pool, "release", then_b_takes_over)
    await threads.renew({"run_1": mine})
    monkeypatch.setattr(pool, "release", release)
    assert theirs[-1] is not None, "b took the lapsed lease"
    assert await real_redis.get(key) == "b" and await threads.holds(theirs[-1])
    assert await threads.renew({"run_1": mine}) == ["run_1"]
    assert await real_redis.get(key) == "b"


async def test_a_request_no_worker_plans_is_failed_with_what_to_check(
    make_services, real_redis
) -> None:
    slack = await FakeSlackAPI().start()
    s = planning_settings(timeout_s=0.2, pickup_s=0.1)
    s = s.model_copy(update={"slack": s.slack.model_copy(update={"api_url": slack.url})})
    svc = make_services(s, scripted(design()), redis=real_redis, start=False)  # no worker
    try:
        async with serve_bot(svc, slack) as h:
            await h.mention("Compare flights to Berlin.")
            await h.slack.wait_for(lambda: bool(h.slack.of("chat.postMessage")))
            await h.runs_end()
            (said,) = h.slack.of("chat.postMessage")
            assert said["text"].startswith(":x: no worker planned this request in time")
            assert "`caramba worker`" in said["text"]
    finally:
        await slack.stop()


async def test_a_request_that_cannot_be_recorded_is_answered(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:

        async def down(*_: Any) -> None:
            raise ConnectionError("Redis is away")

        h.bot.svc.store.create_run = down  # type: ignore[method-assign]
        await h.mention("Compare flights to Berlin.")
        await h.slack.wait_for(lambda: bool(h.slack.of("chat.postMessage")))
        (said,) = h.slack.of("chat.postMessage")
        assert said["text"].startswith(":x: I could not take this request (ConnectionError)")
        assert not h.bot.relays
