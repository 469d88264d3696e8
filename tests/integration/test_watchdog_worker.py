"""A turn lost everywhere — never in the broker, the ledger or a chain — is submitted
again by a real worker's watchdog, and its run completes instead of staying ``running``.

A real worker process (``python -m tasks.worker``), real Redis, the OpenAI-compatible fake
on the real litellm path. The run is started by a client whose scheduler records the first
turn and publishes nothing: only the watchdog (``scheduler.stall_periods`` ×
``stall_period_s``, short here) can move it on.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from redis.asyncio import Redis

from core.config import load_settings
from core.llm.scripted import ScriptedModel
from core.process.wiring import build_services
from core.runs.control import start_run
from core.scheduler import RecordingScheduler
from core.types import AgentSpec
from core.types.events import RunFinished
from core.types.run import RunStatus
from tests.conftest import REDIS_URL
from tests.fakes.llm_server import FakeReply, ThreadedFakeLLMServer
from tests.helpers import collect
from tests.integration.processes import Process, unique_prefix, worker_env

pytestmark = pytest.mark.integration


@pytest.fixture
def prefix() -> Iterator[str]:
    with unique_prefix() as name:
        yield name


async def test_a_worker_resubmits_a_turn_nobody_holds_and_the_run_completes(
    prefix: str,
) -> None:
    with ThreadedFakeLLMServer() as llm:
        llm.set_responder(lambda _body: FakeReply(tool_calls=[("finish", {"result": "42"})]))
        env = worker_env(
            redis__url=REDIS_URL,
            redis__key_prefix=prefix,
            llm__model="openai/fake-model",
            llm__api_base=llm.base_url,
            scheduler__watchdog_s="0.5",
            scheduler__stall_period_s="0.5",
            scheduler__stall_periods="2",
        )
        worker = Process.worker(env, "watchdog-worker")
        redis = Redis.from_url(REDIS_URL, decode_responses=True)
        try:
            worker.wait_for(" ready.", timeout=120)
            settings = load_settings(redis={"url": REDIS_URL, "key_prefix": prefix})
            recorder = RecordingScheduler()  # the first turn goes nowhere: lost everywhere
            svc = build_services(settings, recorder, llm=ScriptedModel(), redis=redis)
            run_id = await start_run(svc, "the answer", AgentSpec(name="Solo", tools=("finish",)))
            assert len(recorder.jobs) == 1

            events = await collect(svc, run_id, timeout_s=30)
            final = events[-1]
            assert isinstance(final, RunFinished), worker.tail()
            assert final.status is RunStatus.COMPLETED and final.result == "42", final
            assert len(recorder.jobs) == 1, "moved on by the worker, not by this client"
            worker.wait_for("agent Solo made no progress", timeout=5)
            assert run_id in worker.output()
        finally:
            worker.cleanup()
            await redis.aclose()
