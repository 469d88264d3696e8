"""Durable under chaos, small: runs of talking agents finish while their worker processes
are killed (SIGKILL) and restarted; nothing is lost and nothing is done twice.

The harness is bench/chaos.py's (``run_phase``: real ``python -m tasks.worker``
processes, real Redis, litellm against the OpenAI-compatible fake playing each agent):
here 4 runs of an Orchestrator and two members who exchange messages and post to the
chat, the model at 100 ms, and up to 4 kills 1–2 s apart of a worker mid-turn: in turn
one with a model call outstanding at the call keeper ("running") and one whose call the
keeper has just answered, as it applies and saves the turn ("committing"). The victims are
found as bench/chaos_victims.py finds them (the keeper's stream, the workers' logs) with
the default ``celery.turn_dispatch``: a picker gone blind kills nobody, and fails here.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.chaos import ChaosConfig, run_phase
from tests.conftest import REDIS_URL
from tests.fakes.llm_server import ThreadedFakeLLMServer

pytestmark = pytest.mark.integration

RUNS = 4
KILLS = 4


@pytest.fixture
def fake_llm() -> Iterator[ThreadedFakeLLMServer]:
    with ThreadedFakeLLMServer() as server:
        yield server


async def test_runs_finish_and_lose_nothing_while_workers_are_killed(
    fake_llm: ThreadedFakeLLMServer,
) -> None:
    config = ChaosConfig(
        name="chaos_test",
        runs=RUNS,
        seed=7,
        kill_min_s=1.0,
        kill_max_s=2.0,
        latency_ms=100,
        kills=KILLS,
        victims="running,committing",  # every kill hits a worker mid-turn
        stagger_s=1.5,
        chaos_s=20,
        # Not ended 60 s after the chaos: stuck (a replacement worker takes 3–5 s to start
        # here, 30 s and more on a 2-core machine under a load of 20).
        deadline_s=60,
        # Intents still pending after the runs: one a killed worker had claimed is taken
        # over after scheduler.intent_claim_idle_s (30 s); the wait ends when none is left.
        settle_s=40,
        concurrency=16,
        redis_url=REDIS_URL,
    )
    report = await run_phase(fake_llm, config)
    summary = "\n".join([report.line(), report.details(), report.diagnosis(), report.log_summary()])

    # The chaos happened while the runs ran: at least two workers were killed mid-turn, one
    # in each state (on a loaded machine a restarted worker takes long enough to start that
    # the runs may finish before the third kill).
    assert report.kills >= 2, summary
    assert report.kills_by_state["running"] >= 1, summary
    assert report.kills_by_state["committing"] >= 1, summary
    assert not report.missed_kills, summary
    assert report.completed == RUNS, summary
    assert report.stuck == 0, summary
    assert report.lost_messages == 0, summary
    assert report.duplicate_effects == 0, summary
    # Every post asked for by a saved turn was made (once: above), and no turn applied twice.
    assert report.missing_effects == 0, summary
    assert report.double_applied == 0, summary
    assert report.turns > 0 and report.llm_requests >= report.turns, summary
    # No model call asked twice: a killed worker's call lives on at the call keeper, and
    # an answer already in is reused by the turn's next delivery.
    assert report.extra_llm_calls == 0, summary
