"""A dead worker's turns come back within seconds, with the default visibility timeout.

Real worker processes (``python -m tasks.worker``), real Redis, the OpenAI-compatible fake
on the real litellm path, and ``celery.visibility_timeout_s`` left at its default (an
hour): only the turn ledger's leases (tasks/ledger.py) can bring a killed worker's turn
back within the test's time. ``celery.lease_s`` is 1 s here to keep the test short (10 s
by default).
"""

from __future__ import annotations

import asyncio
import re
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from core.runs.control import start_run
from core.scheduler.base import TurnJob
from core.types import AgentSpec
from core.types.events import LLMCalled, RunFinished
from core.types.run import RunStatus
from tasks.ledger import TurnLedger
from tasks.scheduler import CeleryScheduler
from tests.fakes.llm_server import FakeReply, ThreadedFakeLLMServer
from tests.helpers import collect
from tests.integration.processes import Process
from tests.integration.worker_procs import (
    WorkerClient,
    fault_arming,
    fault_worker_env,
    running_workers,
)

pytestmark = pytest.mark.integration

LEASE_S = 1.0
SLOW_S = 5 * LEASE_S  # a model call that outlasts several leases


class Script:
    """Each agent calculates, then finishes with the answer; the first model call of the
    agent named ``Victim`` arms the ``after_llm`` fault point (its worker kills itself)."""

    def __init__(self, arm: Any) -> None:
        self._arm = arm
        self._lock = threading.Lock()
        self.first_calls: dict[str, list[float]] = {}

    def __call__(self, body: dict[str, Any]) -> FakeReply:
        messages = body["messages"]
        match = re.match(r"You are (.+?),", messages[0]["content"])
        assert match, messages[0]["content"][:200]
        name = match.group(1)
        done = [m["content"] for m in messages if m["role"] == "tool"]
        if done:
            return FakeReply(tool_calls=[("finish", {"result": done[-1]})])
        with self._lock:
            calls = self.first_calls.setdefault(name, [])
            calls.append(time.monotonic())
            if name == "Victim" and len(calls) == 1:
                self._arm()
        return FakeReply(tool_calls=[("calculate", {"expression": "2**10"})])


@pytest.fixture(scope="module")
def workers(fake_llm: ThreadedFakeLLMServer, prefix: str) -> Iterator[list[Process]]:
    env = fault_worker_env(
        prefix, fake_llm.base_url, celery__lease_s=str(LEASE_S), celery__turn_timeout_s="30"
    )
    with running_workers(env, 2) as procs:
        yield procs


class Client(WorkerClient):
    """What starts runs and reads them: services on a publisher of our own."""

    def __init__(self, prefix: str, publisher: type[CeleryScheduler] = CeleryScheduler) -> None:
        super().__init__(prefix, publisher, celery={"lease_s": LEASE_S})
        # The default: no help from kombu.
        assert self.settings.celery.visibility_timeout_s == 3600

    async def run(self, name: str, timeout_s: float = 60) -> tuple[str, list[Any]]:
        spec = AgentSpec(name=name, tools=("calculate", "finish"))
        run_id = await start_run(self.svc, f"2 to the 10th ({name})", spec)
        return run_id, await collect(self.svc, run_id, timeout_s=timeout_s)


def completed_once(events: list[Any]) -> None:
    final = next(e for e in events if isinstance(e, RunFinished))
    assert final.status is RunStatus.COMPLETED, final
    assert final.result == "2**10 = 1024", final
    saved = [(e.agent_id, e.seq) for e in events if isinstance(e, LLMCalled)]
    assert len(saved) == len(set(saved)) == 2, saved  # two turns, each saved once


async def test_a_long_turn_that_renews_its_lease_is_never_published_again(
    workers: list[Process], fake_llm: ThreadedFakeLLMServer, prefix: str
) -> None:
    script = Script(arm=lambda: None)
    fake_llm.set_responder(script)
    fake_llm.latency_s = SLOW_S
    client = Client(prefix)
    try:
        run_id, events = await client.run("Slow")
        deliveries = await client.redis.hgetall(client.svc.store.keys.deliveries(run_id))
    finally:
        fake_llm.latency_s = 0.0
        await client.close()
    completed_once(events)
    assert len(script.first_calls["Slow"]) == 1  # the model was asked once
    assert set(deliveries.values()) == {"1"}, deliveries  # each turn delivered once
    for worker in workers:
        assert "published" not in worker.output(), worker.tail()


async def test_a_killed_workers_turn_runs_again_within_a_few_leases(
    workers: list[Process], fake_llm: ThreadedFakeLLMServer, prefix: str
) -> None:
    killed_at: list[float] = []

    async def watch() -> None:
        while not killed_at:
            if any(w.returncode is not None for w in workers):
                killed_at.append(time.time())
            await asyncio.sleep(0.02)

    with fault_arming(prefix) as arm:
        script = Script(arm=lambda: arm("after_llm"))
        fake_llm.set_responder(script)
        client = Client(prefix)
        watcher = asyncio.create_task(watch())
        try:
            _, events = await client.run("Victim", timeout_s=40)
            await asyncio.wait_for(watcher, 5)
            pending = await client.settled(within_s=5)  # the new worker settles the entry
        finally:
            watcher.cancel()
            await client.close()
    dead = [w for w in workers if w.returncode is not None]
    assert [w.returncode for w in dead] == [-signal.SIGKILL], [w.tail() for w in dead]
    completed_once(events)
    # The killed worker's turn was saved by the other worker, after the kill.
    saved_at = next(e.at for e in events if isinstance(e, LLMCalled) and e.seq == 0)
    ended_at = next(e.at for e in events if isinstance(e, RunFinished))
    print(
        f"the killed worker's turn was saved {saved_at - killed_at[0]:.1f} s after the kill; "
        f"the run ended {ended_at - killed_at[0]:.1f} s after it"
    )
    assert saved_at > killed_at[0]
    assert pending == 0
    # Brought back within the run's 40 s (kombu would have waited the visibility timeout,
    # an hour): by the ledger's sweep or the watchdog, whichever process came first.


class Recorder(CeleryScheduler):
    """A publisher killed after recording its turns and before publishing them."""

    def send_recorded(self, task_id: str, job: TurnJob) -> None:
        return None


async def test_turns_recorded_or_claimed_but_never_published_still_run(
    workers: list[Process], fake_llm: ThreadedFakeLLMServer, prefix: str
) -> None:
    fake_llm.set_responder(Script(arm=lambda: None))
    # A publisher records a run's first turn and dies before publishing it; a sweeper
    # claims it and dies before publishing it too. The workers' sweeps still publish it.
    lost = Client(prefix, publisher=Recorder)
    client = Client(prefix)
    try:
        lost_run = asyncio.create_task(lost.run("Unsent"))
        await asyncio.sleep(0.2)  # recorded by now, within the workers' grace period
        claimed = client.publisher.ledger.claim_stale(
            grace_s=0, visibility_s=3600, queue_empty=True, lease_s=2 * LEASE_S
        )[1]
        assert [TurnLedger.parse(m)[1].seq for m in claimed] == [0]
        _, events = await lost_run
    finally:
        await lost.close()
        await client.close()
    completed_once(events)
