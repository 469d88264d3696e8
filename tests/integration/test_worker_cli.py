"""``caramba worker``: N worker processes that run turns, are restarted when they die (or
stop unasked, even with code 0), and stop together on SIGTERM; a worker stopped any other
way than by a signal exits non-zero."""

from __future__ import annotations

import os
import re
import signal
import sys
import textwrap
from collections.abc import Iterator

import pytest
from redis.asyncio import Redis

from core.config import load_settings
from core.llm.scripted import ScriptedModel
from core.process.wiring import build_services
from core.runs.control import start_run
from core.types import AgentSpec
from core.types.events import RunFinished
from core.types.run import RunStatus
from tasks.app import make_app
from tasks.scheduler import CeleryScheduler
from tests.conftest import REDIS_URL
from tests.fakes.llm_server import FakeReply, ThreadedFakeLLMServer
from tests.helpers import collect
from tests.integration.processes import Process, unique_prefix, worker_env

pytestmark = pytest.mark.integration


@pytest.fixture
def prefix() -> Iterator[str]:
    with unique_prefix() as name:
        yield name


def solo(body: dict) -> FakeReply:
    done = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if not done:
        return FakeReply(tool_calls=[("calculate", {"expression": "2**10"})])
    return FakeReply(tool_calls=[("finish", {"result": done[-1]})])


async def test_caramba_worker_runs_restarts_and_stops_its_processes(prefix: str) -> None:
    with ThreadedFakeLLMServer() as llm:
        llm.set_responder(solo)
        env = worker_env(
            redis__url=REDIS_URL,
            redis__key_prefix=prefix,
            llm__model="openai/fake-model",
            llm__api_base=llm.base_url,
        )
        command = [sys.executable, "-m", "bots.cli", "worker", "-p", "2", "-c", "4"]
        supervisor = Process(command, env, "caramba-worker")
        try:
            supervisor.wait_for(" ready.", timeout=120, count=2)
            settings = load_settings(redis={"url": REDIS_URL, "key_prefix": prefix})
            app = make_app(settings)
            publisher = CeleryScheduler(app, settings)
            redis = Redis.from_url(REDIS_URL, decode_responses=True)
            svc = build_services(settings, publisher, llm=ScriptedModel(), redis=redis)
            try:
                run_id = await start_run(
                    svc, "2 to the 10th?", AgentSpec(name="Solo", tools=("calculate", "finish"))
                )
                final = (await collect(svc, run_id, timeout_s=30))[-1]
            finally:
                await publisher.aclose()
                app.close()
                await redis.aclose()
            assert isinstance(final, RunFinished)
            assert (final.status, final.result) == (RunStatus.COMPLETED, "2**10 = 1024")

            # A worker that dies is started again.
            pids = [
                int(p) for p in re.findall(r"worker \d started \(pid (\d+)\)", supervisor.output())
            ]
            assert len(pids) == 2
            os.kill(pids[0], signal.SIGKILL)
            supervisor.wait_for("killed by SIGKILL", timeout=10)
            supervisor.wait_for(" started (pid ", timeout=10, count=3)

            # SIGTERM: every worker is stopped, then the supervisor exits cleanly.
            assert supervisor.stop(timeout=30) == 0, supervisor.tail()
            assert "warm shutdown of 2 workers" in supervisor.output()
            for pid in [*pids[1:], *map(int, re.findall(r"\(pid (\d+)\)", supervisor.output()))]:
                with pytest.raises(ProcessLookupError):
                    os.kill(pid, 0)
        finally:
            supervisor.cleanup()


SUPERVISE_QUITTERS = textwrap.dedent(
    """
    import logging, sys
    from tasks.supervisor import Supervisor
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    child = [sys.executable, "-c", "import time; time.sleep(0.3)"]  # ends with 0, unasked
    sys.exit(Supervisor(1, lambda i: child, restart_delay_s=0.1).run())
    """
)


def test_the_supervisor_restarts_a_worker_that_exits_0_unasked() -> None:
    supervisor = Process([sys.executable, "-c", SUPERVISE_QUITTERS], worker_env(), "supervisor")
    try:
        supervisor.wait_for("worker 0 exited with code 0", timeout=10)
        supervisor.wait_for(" started (pid ", timeout=10, count=2)
        assert supervisor.stop(timeout=10) == 0
    finally:
        supervisor.cleanup()


def test_a_worker_stopped_without_a_signal_exits_non_zero(prefix: str) -> None:
    """Here by remote control (``celery.remote_control``, off by default); the same holds
    for a worker whose consumer gave up (Celery's "Unrecoverable error", which
    ``Celery.start`` used to turn into exit code 0)."""
    node = f"{prefix}@test"
    env = worker_env(redis__url=REDIS_URL, redis__key_prefix=prefix, celery__remote_control="true")
    command = [sys.executable, "-m", "tasks.worker", "--concurrency=2", f"--name={node}"]
    worker = Process(command, env, "worker")
    try:
        worker.wait_for(" ready.", timeout=120)
        app = make_app(load_settings(redis={"url": REDIS_URL, "key_prefix": prefix}))
        try:
            app.control.shutdown(destination=[node])
        finally:
            app.close()
        assert worker.proc.wait(30) == 1, worker.tail()
        assert "stopped without being asked to" in worker.output()
    finally:
        worker.cleanup()
