"""The call keeper (``llm.keeper``): turns' model calls made by a keeper, with real Redis,
the real litellm path against the OpenAI-compatible fake, and keepers run as a task of the
test or as a real ``python -m core.process.keeper_main`` process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from core.agent import calls, responses
from core.agent.keeper_client import KeptLLM
from core.config import Settings
from core.errors import LLMError
from core.llm.base import LLMRequest
from core.llm.gateway import LiteLLMGateway
from core.llm.router import RoutedLLM
from core.process.embedded import embedded_services
from core.process.keeper import Keeper
from core.process.wiring import build_llm
from core.services import Services
from core.types import ChatMessage
from tests.conftest import REDIS_URL, make_settings
from tests.fakes.llm_server import FakeFailure, FakeReply, ThreadedFakeLLMServer
from tests.integration.processes import Process, worker_env

pytestmark = pytest.mark.integration

MODEL = "openai/fake-model"
RUN, AGENT = "run_keeper", "agt_keeper"


@pytest.fixture
def llm_server() -> Any:
    with ThreadedFakeLLMServer() as server:
        yield server


@pytest.fixture
def keeper_settings(llm_server: ThreadedFakeLLMServer, real_redis: Any) -> Settings:
    return make_settings(
        redis={"url": REDIS_URL, "key_prefix": real_redis.test_prefix},
        llm={
            "model": MODEL,
            "api_base": llm_server.base_url,
            "backoff_initial_s": 0.01,
            "backoff_max_s": 0.05,
            "keeper": True,
            "keeper_claim_idle_s": 1.0,
        },
    )


@pytest.fixture
def worker_services(
    keeper_settings: Settings, real_redis: Any, make_services: Any
) -> Callable[[], Services]:
    """Services of a worker process (its own keeper client), on the test's Redis."""

    def make() -> Services:
        llm = build_llm(keeper_settings, keeper=True)
        assert isinstance(llm, KeptLLM)
        return make_services(keeper_settings, llm, redis=real_redis, start=False)

    return make


@contextlib.asynccontextmanager
async def running_keeper(settings: Settings, redis: Any) -> AsyncIterator[Keeper]:
    """A keeper as a task of the test, alive (its heartbeat seen) when entered."""
    gateway = LiteLLMGateway(settings.llm)
    keeper = Keeper(settings, gateway, redis)
    stop = asyncio.Event()
    task = asyncio.create_task(keeper.run(stop))
    try:
        await until(lambda: redis.exists(keeper.keys.llm_keepers()))
        yield keeper
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await gateway.aclose()


async def until(check: Callable[[], Any], within_s: float = 15.0) -> None:
    deadline = time.monotonic() + within_s
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def turn_request(text: str = "hello") -> LLMRequest:
    return LLMRequest(
        model=MODEL,
        messages=(ChatMessage(role="user", content=text),),
        run_id=RUN,
        agent_id=AGENT,
        agent_name="Keeper test",
    )


async def saved_answer(svc: Services, seq: int) -> responses.SavedResponse | None:
    keys = svc.store.keys
    return responses.parse(
        await svc.redis.hget(keys.responses(RUN), keys.response_field(AGENT, seq))
    )


async def test_a_turn_call_through_the_keeper_is_answered_and_saved(
    llm_server: ThreadedFakeLLMServer, keeper_settings: Settings, real_redis: Any, worker_services
) -> None:
    llm_server.script(FakeReply(content="kept answer", prompt_tokens=11, completion_tokens=3))
    svc = worker_services()
    request = turn_request()
    async with running_keeper(svc.settings, real_redis) as keeper:
        response, reused = await calls.complete(svc, request, 3, None)
    assert (response.content, response.usage.prompt_tokens, reused) == ("kept answer", 11, False)
    assert keeper.asked == 1 and len(llm_server.requests) == 1
    saved = await saved_answer(svc, 3)
    assert saved is not None
    assert saved.fingerprint == responses.fingerprint(request) and saved.response == response
    keys = svc.store.keys
    assert not await real_redis.exists(keys.llm_call(RUN, AGENT, 3))  # no longer in flight
    assert await real_redis.xlen(keys.llm_calls()) == 0  # acknowledged and deleted


async def test_a_redelivery_waits_for_the_call_its_dead_requester_left_in_flight(
    llm_server: ThreadedFakeLLMServer, keeper_settings: Settings, real_redis: Any, worker_services
) -> None:
    llm_server.latency_s = 1.0
    llm_server.set_responder(lambda _body: FakeReply(content="paid once"))
    first_worker, second_worker = worker_services(), worker_services()
    request = turn_request()
    async with running_keeper(first_worker.settings, real_redis) as keeper:
        first = asyncio.create_task(calls.complete(first_worker, request, 4, None))
        await until(lambda: len(llm_server.requests) == 1)
        first.cancel()  # the worker dies while the model thinks
        with pytest.raises(asyncio.CancelledError):
            await first
        # The turn's redelivery, on another worker, before the answer arrived.
        started = time.monotonic()
        response, reused = await calls.complete(second_worker, request, 4, None)
        waited = time.monotonic() - started
    assert (response.content, reused) == ("paid once", True)
    assert len(llm_server.requests) == 1 and keeper.asked == 1
    assert waited < 2.0
    # A later delivery finds it saved (core.agent.turn passes it in).
    saved = await saved_answer(second_worker, 4)
    again, reused = await calls.complete(second_worker, request, 4, saved)
    assert (again, reused) == (response, True)
    assert len(llm_server.requests) == 1


async def test_a_delivery_killed_while_asking_leaves_no_mark_without_its_call(
    llm_server: ThreadedFakeLLMServer,
    keeper_settings: Settings,
    real_redis: Any,
    worker_services,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The chaos bench's stranded turn: a worker killed between marking its call in
    flight and handing it to the keepers left a mark with no call behind it, and every
    later delivery waited for that call until the model's whole deadline. Marking and
    handing over are one script now: whatever the kill interrupts, the redelivery is
    answered at once, by one model call."""
    llm_server.set_responder(lambda _body: FakeReply(content="asked once"))
    first_worker, second_worker = worker_services(), worker_services()
    request = turn_request()
    listening = asyncio.Event()
    real_listen = KeptLLM._listen

    async def slow_listen(self: KeptLLM, channel: Any) -> None:
        listening.set()
        await asyncio.sleep(30)  # the worker is killed while it subscribes

    async with running_keeper(first_worker.settings, real_redis) as keeper:
        monkeypatch.setattr(KeptLLM, "_listen", slow_listen)
        first = asyncio.create_task(calls.complete(first_worker, request, 6, None))
        await listening.wait()
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        monkeypatch.setattr(KeptLLM, "_listen", real_listen)
        async with asyncio.timeout(10):  # not the model's whole deadline (minutes)
            response, reused = await calls.complete(second_worker, request, 6, None)
    assert (response.content, reused) == ("asked once", False)
    assert len(llm_server.requests) == 1 and keeper.asked == 1


async def test_a_model_error_reaches_the_turn_as_the_gateways_error(
    llm_server: ThreadedFakeLLMServer, keeper_settings: Settings, real_redis: Any, worker_services
) -> None:
    svc = worker_services()
    failure = FakeFailure(400, "model 'fake-model' does not support this request")
    llm_server.script(failure)
    with pytest.raises(LLMError) as direct:
        await LiteLLMGateway(keeper_settings.llm).complete(turn_request())
    llm_server.script(failure)
    async with running_keeper(svc.settings, real_redis):
        with pytest.raises(LLMError) as kept:
            await calls.complete(svc, turn_request(), 5, None)
    assert str(kept.value) == str(direct.value)
    assert "does not support this request" in str(kept.value)
    assert (kept.value.status, kept.value.model, kept.value.retryable) == (400, MODEL, False)
    keys = svc.store.keys
    assert not await real_redis.exists(keys.llm_call(RUN, AGENT, 5))
    assert await saved_answer(svc, 5) is None
    assert not [k async for k in real_redis.scan_iter(match=f"{keys.prefix}:*llm-result*")]


async def test_with_no_keeper_alive_the_turn_calls_the_model_itself(
    llm_server: ThreadedFakeLLMServer,
    keeper_settings: Settings,
    real_redis: Any,
    worker_services: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    llm_server.script(FakeReply(content="direct"))
    svc = worker_services()
    with caplog.at_level("WARNING"):
        response, reused = await calls.complete(svc, turn_request(), 7, None)
    assert (response.content, reused) == ("direct", False)
    assert "no call keeper is alive" in caplog.text
    assert (await saved_answer(svc, 7)) is not None
    assert not await real_redis.exists(svc.store.keys.llm_call(RUN, AGENT, 7))


async def test_by_default_workers_hand_turn_calls_to_the_keeper_and_embedded_mode_calls_directly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """llm.keeper is on by default for a worker's turns; embedded mode (caramba run, demo,
    web --demo) has no keeper and calls the model itself, without the no-keeper warning."""
    settings = make_settings()
    assert settings.llm.keeper
    assert isinstance(build_llm(settings, keeper=True), KeptLLM)
    with caplog.at_level("WARNING"):
        async with embedded_services(settings) as svc:
            assert isinstance(svc.llm, RoutedLLM)  # the model port itself, no keeper
    assert not [r for r in caplog.records if "keeper" in r.getMessage()]


SUPERVISE = textwrap.dedent(
    """
    import logging, sys
    from tasks.supervisor import Supervisor, keeper_command
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    worker = [sys.executable, "-c", "import time; time.sleep(60)"]
    keeper = keeper_command(loglevel="info")
    sys.exit(Supervisor(1, lambda i: worker, restart_delay_s=0.1, keeper=keeper).run())
    """
)


async def test_a_killed_keepers_call_is_taken_over_by_the_keeper_started_again(
    llm_server: ThreadedFakeLLMServer, keeper_settings: Settings, real_redis: Any, worker_services
) -> None:
    """``caramba worker``'s supervisor keeps a real keeper process beside its workers;
    killed (-9) while the model thinks, it is started again, and the new keeper takes
    the call over once idle for llm.keeper_claim_idle_s (1 s here). The first keeper's
    model call is slow (30 s): whatever the load, it is killed before its answer, and
    only the keeper started again can answer (in 1 s).

    " ready." means the keeper's heartbeat is on: the call goes to it, not to the model
    directly (its heartbeat once came with the upkeep's first beat, just after the line,
    and a call asked in between, under load, was made here, with nothing to take over)."""
    llm_server.latency_s = 30.0
    llm_server.set_responder(lambda _body: FakeReply(content="answered by the next keeper"))
    svc = worker_services()
    env = worker_env(
        redis__url=REDIS_URL,
        redis__key_prefix=real_redis.test_prefix,
        llm__model=MODEL,
        llm__api_base=llm_server.base_url,
        llm__keeper="true",
        llm__keeper_claim_idle_s="1",
    )
    heartbeat = svc.store.keys.llm_keepers()
    supervisor = Process([sys.executable, "-c", SUPERVISE], env, "supervisor")
    try:
        await asyncio.to_thread(supervisor.wait_for, " ready.", 60)
        first = int(supervisor.output().split("call keeper started (pid ")[1].split(")")[0])
        call = asyncio.create_task(calls.complete(svc, turn_request(), 6, None))
        await until(lambda: len(llm_server.requests) == 1)
        llm_server.latency_s = 1.0  # the next keeper's call
        os.kill(first, signal.SIGKILL)  # its answer is lost with it
        await asyncio.to_thread(supervisor.wait_for, "call keeper killed by SIGKILL", 10)
        response, reused = await asyncio.wait_for(call, 30)
        assert "took over call" in supervisor.output()
        assert await asyncio.to_thread(supervisor.stop, 15) == 0
        out = supervisor.output()
    finally:
        supervisor.cleanup()
    assert (response.content, reused) == ("answered by the next keeper", False)
    assert len(llm_server.requests) == 2
    assert (await saved_answer(svc, 6)) is not None
    assert "SIGTERM: warm shutdown of 1 workers and the call keeper" in out, out
    assert "call keeper stopped (exited with code 0)" in out, out
    assert not await real_redis.get(heartbeat)  # a keeper that stops says so
