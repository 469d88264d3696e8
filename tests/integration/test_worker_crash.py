"""Crash recovery with real worker processes: a worker killed (SIGKILL) mid-turn loses
nothing and applies nothing twice; another worker finishes the run.

Four ``python -m tasks.worker`` processes run with ``CARAMBA_FAULTS=1`` and a 3 s
visibility timeout, against real Redis and the OpenAI-compatible fake (the real litellm
path). Each case arms one fault point; the first process to reach it kills itself like
``kill -9``, its unacknowledged turns are handed to the others by the broker, and the run
still ends with every agent's result at its parent and every intent processed once.
"""

from __future__ import annotations

import asyncio
import re
import signal
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from core.agent import faults
from core.runs.control import start_run
from core.types import AgentSpec
from core.types.events import (
    AgentFinished,
    ChatPosted,
    LLMCalled,
    MessageSent,
    RunEvent,
    RunFinished,
)
from core.types.run import RunStatus
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

WORKERS = 5  # each case kills one; at least one must be left for the last case
VISIBILITY_TIMEOUT_S = 3
# A turn that outlives the 3 s visibility timeout on a loaded machine is delivered again
# while it runs, and every copy counts: a higher cap than production's keeps such a slow
# turn from being quarantined here (production's visibility timeout is an hour).
MAX_DELIVERIES = 20

ROOT_TOOLS = ("create_agent", "wait_for_messages", "finish", "calculate", "post_to_chat")


class Society:
    """The fake model's script, as a function of each request.

    The Orchestrator creates Alpha and Beta and waits. Each of them posts to the chat and
    calculates in its first turn (a turn that is saved, with an intent, and goes on), then
    finishes with the answer. The Orchestrator finishes with both results. ``arm`` is
    called when the first of Alpha's or Beta's first turns asks the model: the crash hits
    one of the busiest turns of the run.
    """

    def __init__(self, arm: Callable[[], object], on_turn: int = 1) -> None:
        self._arm = arm
        self._on_turn = on_turn  # 2: a child's second turn, which runs chained in a task
        self._armed = threading.Event()

    def _maybe_arm(self, turn: int) -> None:
        if turn == self._on_turn and not self._armed.is_set():
            self._armed.set()
            self._arm()

    def __call__(self, body: dict[str, Any]) -> FakeReply:
        messages = body["messages"]
        match = re.match(r"You are (.+?),", messages[0]["content"])
        assert match, messages[0]["content"][:200]
        name = match.group(1)
        calls = [
            c["function"]["name"]
            for m in messages
            if m["role"] == "assistant"
            for c in m.get("tool_calls") or ()
        ]
        if name == "Orchestrator":
            results = sorted(
                m["content"].split("\n", 1)[1]
                for m in messages
                if m["role"] == "user" and m["content"].startswith("[Result from")
            )
            if "create_agent" not in calls:
                return FakeReply(
                    tool_calls=[
                        ("create_agent", child("Alpha")),
                        ("create_agent", child("Beta")),
                        ("wait_for_messages", {}),
                    ]
                )
            if len(results) == 2:
                return FakeReply(tool_calls=[("finish", {"result": " | ".join(results)})])
            return FakeReply(tool_calls=[("wait_for_messages", {})])
        if "calculate" not in calls:
            self._maybe_arm(1)
            expression = "6*7" if name == "Alpha" else "6*9"
            return FakeReply(
                tool_calls=[
                    ("post_to_chat", {"text": f"{name} is on it"}),
                    ("calculate", {"expression": expression}),
                ]
            )
        self._maybe_arm(2)
        answer = next(m["content"] for m in reversed(messages) if m["role"] == "tool")
        return FakeReply(tool_calls=[("finish", {"result": f"{name}: {answer}"})])


def child(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "role": "member",
        "purpose": "Compute your product and report it.",
        "tools": ["calculate", "post_to_chat"],
    }


@pytest.fixture(scope="module")
def workers(fake_llm: ThreadedFakeLLMServer, prefix: str) -> Iterator[list[Process]]:
    env = fault_worker_env(
        prefix,
        fake_llm.base_url,
        llm__backoff_initial_s="0.01",
        llm__backoff_max_s="0.05",
        celery__visibility_timeout_s=str(VISIBILITY_TIMEOUT_S),
        limits__max_deliveries=str(MAX_DELIVERIES),
        celery__turn_timeout_s="20",
        scheduler__intent_claim_idle_s="2",
        scheduler__background_interval_s="0.1",
    )
    with running_workers(env, WORKERS) as procs:
        yield procs


def client(prefix: str) -> WorkerClient:
    return WorkerClient(
        prefix,
        celery={"visibility_timeout_s": VISIBILITY_TIMEOUT_S},
        limits={"max_deliveries": MAX_DELIVERIES},
    )


async def events_until(
    svc: Any, run_id: str, done: Callable[[list[RunEvent]], bool], timeout_s: float
) -> list[RunEvent]:
    """All the run's events, re-read until ``done`` holds (intents may land after the end)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        events = [e for _, e in await svc.store.read_events(run_id, count=10_000)]
        if done(events) or loop.time() > deadline:
            return events
        await asyncio.sleep(0.1)


CASES = [
    # (approved_call_kept is reached only by a call a person approved: that workload is
    # tests/scenarios/test_tool_approval_edges.py's)
    *(pytest.param(p, 1, id=p) for p in faults.POINTS if p != "approved_call_kept"),
    # A child's second turn runs chained in the task of its first (tasks/chain.py): the
    # chained turn lives only in the publish ledger, which must bring it back.
    pytest.param("after_llm", 2, id="after_llm-chained"),
]


@pytest.mark.parametrize(("point", "on_turn"), CASES)
async def test_a_worker_killed_mid_turn_loses_nothing(
    point: str,
    on_turn: int,
    workers: list[Process],
    fake_llm: ThreadedFakeLLMServer,
    prefix: str,
) -> None:
    alive = [w for w in workers if w.returncode is None]
    assert len(alive) >= 2, "a previous case killed more than one worker"
    root = AgentSpec(name="Orchestrator", role="orchestrator", tools=ROOT_TOOLS)
    with fault_arming(prefix) as arm:
        fake_llm.set_responder(Society(arm=lambda: arm(point), on_turn=on_turn))
        crash = client(prefix)
        svc, redis, settings = crash.svc, crash.redis, crash.settings
        try:
            run_id = await start_run(svc, "Two products, reported by two agents", root)
            await collect(svc, run_id, timeout_s=60)
            events = await events_until(
                svc, run_id, lambda ev: sum(isinstance(e, ChatPosted) for e in ev) >= 2, 10
            )
            marked = f"{prefix}:intent-done:{run_id}:*"
            done_markers = [k async for k in redis.scan_iter(match=marked)]
            # Every message published was run to its end (a lost one was published again).
            # The run may end before the dead worker's entries are: one it held for a turn
            # that ended (settled with its next renewal, which never came) lapses with its
            # lease, is claimed by a sweep, published, dropped as applied and settled with
            # the survivor's next renewal — up to lease_s + two sweep intervals after the
            # kill.
            unsettled = await crash.settled(within_s=2 * settings.celery.lease_s + 10)
            counts = await redis.hgetall(svc.store.keys.deliveries(run_id))
            deliveries = {k: int(v) for k, v in counts.items()}
        finally:
            await crash.close()

    # Exactly one worker died, killed at the armed point; the others carried on.
    dead = [w for w in alive if w.returncode is not None]
    assert len(dead) == 1, [(w.name, w.returncode) for w in alive]
    assert dead[0].returncode == -signal.SIGKILL
    assert f"fault point {point} armed" in dead[0].output()
    assert unsettled == 0
    # The run completed with both children's results: no message was lost.
    final = next(e for e in events if isinstance(e, RunFinished))
    assert final.status is RunStatus.COMPLETED, final
    assert final.result == "Alpha: 6*7 = 42 | Beta: 6*9 = 54"
    # Nothing was applied twice: one save per turn, one end per agent, each message once.
    turns = Counter((e.agent_id, e.seq) for e in events if isinstance(e, LLMCalled))
    assert set(turns.values()) == {1}, turns
    ended = Counter(e.agent_id for e in events if isinstance(e, AgentFinished))
    assert len(ended) == 3 and set(ended.values()) == {1}, ended
    sent = Counter(e.message_id for e in events if isinstance(e, MessageSent))
    assert set(sent.values()) == {1}, sent
    results_to_root = [e for e in events if isinstance(e, MessageSent) and e.recipient == root.id]
    assert len(results_to_root) == 2
    # Every intent was processed exactly once.
    posted = [e for e in events if isinstance(e, ChatPosted)]
    assert sorted(e.text for e in posted) == ["Alpha is on it", "Beta is on it"]
    assert len({e.key for e in posted}) == 2 and len(done_markers) == 2
    # The turn the dead worker was running was delivered again (and only as often as needed).
    assert max(deliveries.values()) >= 2, deliveries
    # None looped: the counter also counts copies dropped at once as stale.
    assert max(deliveries.values()) <= settings.limits.max_deliveries, deliveries
