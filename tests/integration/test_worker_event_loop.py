"""A real worker process (``python -m tasks.worker``) runs its turns on the loop
``scheduler.event_loop`` chooses — uvloop by default, asyncio's loop on request — and a run
against the OpenAI-compatible fake completes on either: the model call (aiohttp), the
Redis scripts (redis-py) and Celery's hand-over work the same on both."""

from __future__ import annotations

from typing import Any

import pytest

from core.runs.control import start_run
from core.types import AgentSpec
from core.types.events import RunFinished
from core.types.run import RunStatus
from tests.fakes.llm_server import FakeReply, ThreadedFakeLLMServer
from tests.helpers import collect
from tests.integration.processes import unique_prefix
from tests.integration.worker_procs import WorkerClient, fault_worker_env, running_workers

pytestmark = pytest.mark.integration


def _solo(body: dict[str, Any]) -> FakeReply:
    if not any(m.get("role") == "tool" for m in body["messages"]):  # nothing calculated yet
        return FakeReply(tool_calls=[("calculate", {"expression": "6 * 7"})])
    return FakeReply(tool_calls=[("finish", {"result": "42"})])


@pytest.mark.parametrize(("setting", "kind"), [("auto", "uvloop"), ("asyncio", "asyncio")])
async def test_a_worker_runs_its_turns_on_the_chosen_loop(setting: str, kind: str) -> None:
    with ThreadedFakeLLMServer() as fake, unique_prefix() as prefix:
        fake.set_responder(_solo)
        env = fault_worker_env(
            prefix, fake.base_url, llm__keeper="false", scheduler__event_loop=setting
        )
        with running_workers(env, 1, f"loop-{setting}") as (worker,):
            client = WorkerClient(prefix)
            try:
                spec = AgentSpec(name="Solo", tools=("calculate", "finish"))
                run_id = await start_run(client.svc, "Six times seven?", spec)
                events = await collect(client.svc, run_id, timeout_s=60)
            finally:
                await client.close()
            worker.wait_for("turn runtime started", timeout=10)
            log = worker.output()
    final = events[-1]
    assert isinstance(final, RunFinished), final
    assert (final.status, final.result) == (RunStatus.COMPLETED, "42"), final
    assert (final.status, final.result) == (RunStatus.COMPLETED, "42")
    started = next(line for line in log.splitlines() if "turn runtime started" in line)
    assert started.endswith(f", {kind})"), started
