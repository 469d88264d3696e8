"""The model calls of a two-level fan-out (an orchestrator, 3 leads, 3 members each: the
cohort of ``bench/peers.py``) whose parents wait with ``wait_for_messages(all_children=True)``:
each parent is woken once, by its last child to end, with every result — 2 calls a parent,
none spent waiting again — whatever the scheduler. On Celery the 3 members of a team run
on the worker's threads at once and end within milliseconds of each other: the race
between two children's saves (each one's wake claim checks its siblings) must not wake
the parent before the last one ends."""

from __future__ import annotations

from collections import Counter
from typing import Any

from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs.control import start_run
from core.types import AgentSpec
from core.types.events import RunFinished
from core.types.run import RunStatus
from tests.helpers import collect
from tests.schedulers import SCHEDULERS, scheduled_services

COHORTS = 3


def _results(request: LLMRequest) -> int:
    return sum(
        m.role == "user" and (m.content or "").startswith("[Result from") for m in request.messages
    )


def _asked(request: LLMRequest, tool: str) -> int:
    return sum(c.name == tool for m in request.messages for c in m.tool_calls or ())


def fan_out(request: LLMRequest) -> Reply:
    """A parent creates its 3 children and waits for all of them (or again, if woken with
    fewer than 3 results: the extra call this test counts), then finishes; a member
    calculates once, then finishes."""
    name = request.agent_name
    if name.startswith("Member"):
        if not _asked(request, "calculate"):
            return Reply(calls=(call("calculate", {"expression": "1 + 1"}),))
        return Reply(calls=(call("finish", {"result": f"{name}: done"}),))
    wait = call("wait_for_messages", {"all_children": True})
    if not _asked(request, "create_agent"):
        kids = (
            [(f"Lead {i}", "lead") for i in (1, 2, 3)]
            if name.startswith("Orchestrator")
            else [(f"Member {name[-1]}.{i}", "member") for i in (1, 2, 3)]
        )
        creates = tuple(
            call(
                "create_agent",
                {
                    "name": kid,
                    "role": role,
                    "purpose": "work",
                    "tools": ["calculate", "create_agent"] if role == "lead" else ["calculate"],
                    "budget_share": 0.3,
                },
            )
            for kid, role in kids
        )
        return Reply(calls=(*creates, wait))
    if _results(request) < 3:
        return Reply(calls=(wait,))
    return Reply(calls=(call("finish", {"result": f"{name}: done"}),))


@SCHEDULERS
async def test_each_parent_is_woken_once_with_all_its_childrens_results(
    settings: Any, any_redis: Any, kind: Any
) -> None:
    model = ScriptedModel(responder=fan_out, pace_s=0.02)
    tools = ("create_agent", "wait_for_messages", "finish", "calculate")
    async with scheduled_services(settings, model, kind, any_redis) as svc:
        for cohort in range(COHORTS):
            root = AgentSpec(name=f"Orchestrator {cohort}", role="orchestrator", tools=tools)
            run_id = await start_run(svc, "fan out twice", root)
            events = await collect(svc, run_id, timeout_s=30)
            final = events[-1]
            assert isinstance(final, RunFinished) and final.status is RunStatus.COMPLETED

    calls = Counter(r.agent_name for r in model.requests)
    # Leads and members of every cohort share names: each has 2 calls a cohort.
    expected = (
        {f"Orchestrator {cohort}": 2 for cohort in range(COHORTS)}
        | {f"Lead {i}": 2 * COHORTS for i in (1, 2, 3)}
        | {f"Member {i}.{j}": 2 * COHORTS for i in (1, 2, 3) for j in (1, 2, 3)}
    )
    assert dict(calls) == expected
