"""A call the keepers will never end, after a failover that lost the last writes: its mark
copied to the new primary, the keeper's end (answer saved, mark removed) lost, its
acknowledgement (the entry deleted) made on the new primary. Every later delivery of the
turn joined that call and waited for it until the mark expired (``llm.keeper``'s call TTL,
minutes). Now the acknowledgement removes a mark still standing, and the turn asks again;
a call a keeper still has (pending, even for a dead keeper) is never asked twice. Real
Redis, the real keeper and client, the OpenAI-compatible fake."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from core.agent import calls, responses
from core.agent.keeper_client import KeptCall
from core.config import Settings
from core.process.keeper import Keeper
from core.state.keeper_channel import GROUP
from tests.fakes.llm_server import FakeReply, ThreadedFakeLLMServer
from tests.integration import test_keeper
from tests.integration.test_keeper import (
    AGENT,
    RUN,
    running_keeper,
    saved_answer,
    turn_request,
    until,
)

pytestmark = pytest.mark.integration

# test_keeper's fixtures: the fake model server, the keeper's settings, a worker's services.
llm_server = test_keeper.llm_server
keeper_settings = test_keeper.keeper_settings
worker_services = test_keeper.worker_services


async def test_a_call_whose_keepers_end_was_lost_is_asked_again_at_once(
    llm_server: ThreadedFakeLLMServer,
    keeper_settings: Settings,
    real_redis: Any,
    worker_services,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The keeper's end of the first call lost (as with the old primary), its
    acknowledgement kept (by the new one): the mark goes with the acknowledgement, and
    the waiting turn asks again within its poll, not after the mark's TTL (440 s)."""
    answers = iter(["lost with the old primary", "asked again"])
    llm_server.set_responder(lambda _body: FakeReply(content=next(answers)))
    svc = worker_services()
    request = turn_request()
    keys = svc.store.keys
    real_end = Keeper._end
    ends_lost: list[str] = []

    async def end_lost_once(self: Keeper, call: KeptCall, outcome: Any) -> None:
        if not ends_lost:
            ends_lost.append(call.call_id)  # written to a primary that then died
            return
        await real_end(self, call, outcome)

    monkeypatch.setattr(Keeper, "_end", end_lost_once)
    async with running_keeper(svc.settings, real_redis) as keeper:
        started = time.monotonic()
        async with asyncio.timeout(10):  # not the mark's TTL
            response, reused = await calls.complete(svc, request, 8, None)
        waited = time.monotonic() - started
    assert len(ends_lost) == 1
    assert (response.content, reused) == ("asked again", False)
    assert len(llm_server.requests) == 2 and keeper.asked == 2
    assert waited < 5.0, waited
    assert (await saved_answer(svc, 8)) is not None
    assert not await real_redis.exists(keys.llm_call(RUN, AGENT, 8))
    assert await real_redis.xlen(keys.llm_calls()) == 0


async def test_a_slow_call_a_live_keeper_makes_is_joined_not_asked_twice(
    llm_server: ThreadedFakeLLMServer, keeper_settings: Settings, real_redis: Any, worker_services
) -> None:
    """The model thinks longer than the waiting turns' check (2 s): the call's entry is
    pending for its keeper, so the redelivery keeps waiting for it."""
    llm_server.latency_s = 4.5
    llm_server.set_responder(lambda _body: FakeReply(content="paid once"))
    first_worker, second_worker = worker_services(), worker_services()
    request = turn_request()
    async with running_keeper(first_worker.settings, real_redis) as keeper:
        first = asyncio.create_task(calls.complete(first_worker, request, 9, None))
        await until(lambda: len(llm_server.requests) == 1)
        first.cancel()  # the worker dies while the model thinks
        with pytest.raises(asyncio.CancelledError):
            await first
        response, reused = await calls.complete(second_worker, request, 9, None)
    assert (response.content, reused) == ("paid once", True)
    assert len(llm_server.requests) == 1 and keeper.asked == 1


async def test_a_dead_keepers_pending_call_is_taken_over_not_asked_again(
    llm_server: ThreadedFakeLLMServer,
    keeper_settings: Settings,
    real_redis: Any,
    worker_services,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A call a keeper read and died making (pending for it in the group): the turn
    waiting for it does not ask again; a live keeper takes it over (idle 1 s here) and
    makes it once."""
    llm_server.set_responder(lambda _body: FakeReply(content="taken over"))
    svc = worker_services()
    request = turn_request()
    keys, channel = svc.store.keys, svc.store.keeper
    mark = f"deadkeeper {responses.fingerprint(request)}"
    call = KeptCall("deadkeeper", 10, mark, keys.llm_replies("gone"), request)
    await channel.create_group()
    await real_redis.set(keys.llm_call(RUN, AGENT, 10), mark, px=440_000)
    await real_redis.xadd(keys.llm_calls(), call.fields())
    got = await channel.read("dead-keeper", 10, 100)  # read, then the keeper died
    assert len(got) == 1
    with caplog.at_level("WARNING"):
        async with running_keeper(svc.settings, real_redis) as keeper:
            async with asyncio.timeout(15):
                response, reused = await calls.complete(svc, request, 10, None)
    assert (response.content, reused) == ("taken over", True)
    assert len(llm_server.requests) == 1 and keeper.asked == 1
    assert "took over call" in caplog.text
    pending: Any = await real_redis.xpending(keys.llm_calls(), GROUP)
    assert pending["pending"] == 0
