"""A bot process that stalls past its relay's lease (a loaded machine: its event loop held
up longer than ``relay_lease_s``) while nobody else took the run: it keeps relaying it.

Before, it stopped the relay ("relayed by another bot process now") and took the run up
again at the next adoption round: the run's posts waited meanwhile, a post under way at
the stop could come twice, and whoever waited for the relay to end (the Discord and
Slack harnesses) saw it end with the result not posted yet — a thread whose last message
was a member's "finished" line. Real Redis, the shared chat layer, an in-memory platform.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest

from bots.chat.ports import Place
from bots.chat.relays import Relays
from bots.chat.store import ChatStore
from bots.chat.threads import Threads
from core.config import Settings
from core.llm.scripted import ScriptedModel
from core.types.agent import EndReason
from core.types.events import AgentCreated, AgentFinished, RunFinished, RunStarted
from core.types.run import RunState, RunStatus
from tests.fakes.chat import Thread, fake_adapter

pytestmark = pytest.mark.integration
RUN = "run_lapse"
PLACE = Place("c1", "t1")
LEASE_S = 0.2


async def _until(check: Any, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "not in time"
        await asyncio.sleep(0.01)


async def test_a_relay_whose_lease_lapsed_goes_on_and_ends_with_the_result(
    make_services: Any, real_redis: Any, caplog: pytest.LogCaptureFixture
) -> None:
    svc = make_services(Settings(), ScriptedModel(), redis=real_redis, start=False)
    await svc.store.create_run(RunState(id=RUN, task="t", status=RunStatus.RUNNING))
    thread = Thread()
    adapter, _ = fake_adapter(thread, relay_lease_s=LEASE_S)
    relays = Relays(svc, adapter, Threads(ChatStore.of(svc, adapter.platform)))
    await relays.start()
    try:
        assert await relays.open(RUN, PLACE)
        relaying = relays.tasks[RUN]
        agents = (("orch", "Orchestrator", None), ("ana", "Ana", "orch"), ("bo", "Bo", "orch"))
        await svc.store.emit(
            RunStarted(run_id=RUN, task="t"),
            *(
                AgentCreated(run_id=RUN, agent_id=a, name=n, role="x", parent_id=p, model="m")
                for a, n, p in agents
            ),
            AgentFinished(run_id=RUN, agent_id="ana", reason=EndReason.FINISHED, result="49"),
        )
        await _until(lambda: "milestone: 49" in thread.texts)
        with caplog.at_level(logging.INFO, logger="bots.chat.relays"):
            # The event loop held up on purpose (a stall): the lease lapses meanwhile.
            time.sleep(3 * LEASE_S)  # noqa: ASYNC251
            await _until(lambda: "lapsed and was taken again" in caplog.text)
        await svc.store.emit(
            AgentFinished(run_id=RUN, agent_id="bo", reason=EndReason.FINISHED, result="55"),
            AgentFinished(run_id=RUN, agent_id="orch", reason=EndReason.FINISHED, result="Best"),
            RunFinished(run_id=RUN, status=RunStatus.COMPLETED, result="Best"),
        )
        await asyncio.wait_for(asyncio.shield(relaying), 10)  # not stopped: ended
        assert "relayed by another bot process" not in caplog.text
        assert thread.texts[1:] == ["milestone: 49", "milestone: 55", "result: Best"]
        assert await relays.threads.unfinished() == [], "the relay is over"
    finally:
        await relays.aclose()
