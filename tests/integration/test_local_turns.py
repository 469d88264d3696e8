"""Turns a worker starts itself (``celery.local_turns``, :mod:`tasks.local_turns`): a real
worker (threads pool, in this process) on real Redis runs a lead's members on itself —
the first chained, the others started beside it — instead of publishing them, with the
broker path's guarantees: the run ends with every member's result, nothing stays in the
ledger, a member whose turn raises is handed to the broker and retried, and with
``local_turns`` 0 (or beyond it) they are published as before."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import threading
from collections import Counter
from typing import Any

import pytest

from core.config import Settings
from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from core.process.wiring import build_services
from core.runs.control import start_run
from core.types import AgentSpec
from core.types.events import LLMCalled, RunFinished
from core.types.run import RunStatus
from tasks.app import runtime_of
from tasks.scheduler import CeleryScheduler
from tests.fakes.llm_server import FakeReply, ThreadedFakeLLMServer
from tests.helpers import collect
from tests.integration.processes import unique_prefix
from tests.integration.worker_procs import (
    WorkerClient,
    fault_arming,
    fault_worker_env,
    running_workers,
)
from tests.schedulers import celery_settings, celery_worker, worker_app

pytestmark = pytest.mark.integration

MEMBERS = ("M1", "M2", "M3", "M4")
TOOLS = ("create_agent", "wait_for_messages", "finish")


def team(request: LLMRequest) -> Reply:
    """The lead creates the members at once and waits for all; each member answers."""
    said = json.dumps([m.content for m in request.messages])
    if request.agent_name != "Lead":
        return Reply(calls=(call("finish", {"result": f"{request.agent_name} found 3"}),))
    if "M1 found" not in said:
        made = tuple(
            call("create_agent", {"name": m, "role": "member", "purpose": "look", "tools": TOOLS})
            for m in MEMBERS
        )
        return Reply(calls=(*made, call("wait_for_messages", {"all_children": True})))
    return Reply(calls=(call("finish", {"result": "all found"}),))


async def _run(settings: Settings, model: ScriptedModel) -> tuple[list[Any], dict[str, int]]:
    """One team run on a real worker: its events, and what the worker did with the turns
    its turns scheduled (started here, published)."""
    app = worker_app(settings, model)
    publisher = CeleryScheduler(app, settings)
    svc = build_services(settings, publisher, llm=model, redis=None)
    spec = AgentSpec(name="Lead", role="lead", tools=TOOLS)
    try:
        async with celery_worker(app, concurrency=8):
            run_id = await start_run(svc, "Find flights.", spec)
            events = await collect(svc, run_id, timeout_s=30)
            scheduler = runtime_of(app).scheduler
            assert scheduler is not None and scheduler.local is not None
            for _ in range(200):  # the last entries go with the worker's next renewal
                if await asyncio.to_thread(publisher.ledger.pending) == 0:
                    break
                await asyncio.sleep(0.05)
            done = {
                "local": scheduler.local.started,
                "published": scheduler.published,
                "pending": await asyncio.to_thread(publisher.ledger.pending),
            }
    finally:
        await publisher.aclose()
        await svc.aclose()
        app.close()
    return events, done


def _ended_with_every_result(events: list[Any]) -> None:
    final = events[-1]
    assert isinstance(final, RunFinished), final
    assert (final.status, final.result) == (RunStatus.COMPLETED, "all found")


@pytest.mark.parametrize(("limit", "local"), [(32, 3), (2, 2), (0, 0)])
async def test_a_leads_members_start_on_its_worker_up_to_the_limit(
    settings, real_redis, limit: int, local: int
) -> None:
    settings = celery_settings(settings, real_redis.test_prefix, local_turns=limit)
    events, done = await _run(settings, ScriptedModel(responder=team))
    _ended_with_every_result(events)
    # Of the 4 members: the first is chained, the rest start here up to the limit; the
    # worker publishes what is left (and the lead's wake-up, when no chain took it).
    assert done["local"] == local
    assert done["published"] >= 3 - local
    assert done["pending"] == 0, "every entry settled"


async def test_a_local_turn_that_raises_goes_to_the_broker_and_is_retried(
    settings, real_redis
) -> None:
    settings = celery_settings(settings, real_redis.test_prefix)
    failed: list[str] = []

    def flaky(request: LLMRequest) -> Reply:
        if request.agent_name == "M3" and not failed:
            failed.append("M3")
            raise RuntimeError("a bug in the turn, not a model error")
        return team(request)

    events, done = await _run(settings, ScriptedModel(responder=flaky))
    _ended_with_every_result(events)
    assert failed == ["M3"] and done["local"] == 3
    assert done["published"] >= 1, "the failed turn went to the broker"
    assert done["pending"] == 0


# --- a worker killed while its local turns run -------------------------------------------


class TeamOnTheWire:
    """The team of :func:`team`, played by the HTTP fake from each request alone; the
    first model call of ``M3`` arms the ``after_llm`` fault point (its worker kills
    itself with its local turns in flight)."""

    def __init__(self, arm: Any) -> None:
        self._arm, self._lock, self.calls = arm, threading.Lock(), Counter[str]()

    def __call__(self, body: dict[str, Any]) -> FakeReply:
        match = re.match(r"You are (.+?),", body["messages"][0]["content"])
        assert match, body["messages"][0]["content"][:200]
        name = match.group(1)
        with self._lock:
            self.calls[name] += 1
            if name == "M3" and self.calls[name] == 1:
                self._arm()
        if name != "Lead":
            return FakeReply(tool_calls=[("finish", {"result": f"{name} found 3"})])
        if "M4 found" not in json.dumps(body["messages"]):
            made: list[tuple[str, dict[str, Any] | str]] = [
                ("create_agent", {"name": m, "role": "member", "purpose": "look", "tools": TOOLS})
                for m in MEMBERS
            ]
            return FakeReply(tool_calls=[*made, ("wait_for_messages", {"all_children": True})])
        return FakeReply(tool_calls=[("finish", {"result": "all found"})])


async def test_a_worker_killed_with_local_turns_in_flight_loses_none() -> None:
    lease_s = 1.0
    with ThreadedFakeLLMServer() as fake, unique_prefix() as prefix, fault_arming(prefix) as arm:
        script = TeamOnTheWire(arm=lambda: arm("after_llm"))
        fake.set_responder(script)
        env = fault_worker_env(
            prefix,
            fake.base_url,
            llm__keeper="false",
            celery__lease_s=str(lease_s),
            celery__turn_timeout_s="30",
        )
        with running_workers(env, 2, "local") as workers:
            client = WorkerClient(prefix, celery={"lease_s": lease_s})
            try:
                spec = AgentSpec(name="Lead", role="lead", tools=TOOLS)
                run_id = await start_run(client.svc, "Find flights.", spec)
                events = await collect(client.svc, run_id, timeout_s=60)
                # The survivor settles the last entries with a renewal.
                pending = await client.settled(within_s=10)
                dead = [w.returncode for w in workers if w.returncode is not None]
                tails = [w.tail() for w in workers]
            finally:
                await client.close()
    assert dead == [-signal.SIGKILL], tails
    _ended_with_every_result(events)
    saved = [(e.agent_id, e.seq) for e in events if isinstance(e, LLMCalled)]
    assert len(saved) == len(set(saved)) == 2 + len(MEMBERS), saved  # each turn saved once
    assert script.calls["M3"] == 2, "M3's turn ran again on the survivor"
    assert pending == 0, "every entry settled"
