"""The offline demo answers whatever is typed: a simple question goes the router's direct
path (arithmetic worked out, the clock read, anything else a plain demo-mode answer), any
other request gets a cohort shaped from its words — different tasks, different teams."""

from __future__ import annotations

import asyncio
import tempfile
from collections import Counter
from pathlib import Path

from core.llm.base import LLMRequest
from core.llm.scripted import ScriptedModel
from core.planning import plan
from core.process.demo_flow import offline_settings, team_model
from core.process.demo_shapes import direct, route, shape
from core.process.demo_words import items_in
from core.process.embedded import embedded_services
from core.types.chat import ChatMessage
from tests.conftest import make_settings


def test_simple_questions_go_direct() -> None:
    assert route("What is 2+2?")["path"] == "direct"
    assert direct("What is 2+2?").expression == "2+2"  # type: ignore[union-attr]
    assert direct("How much is 12 × 7?").expression == "12 * 7"  # type: ignore[union-attr]
    assert direct("What time is it in Tokyo?").timezone == "Asia/Tokyo"  # type: ignore[union-attr]
    canned = direct("What is the capital of France?")
    assert canned is not None and canned.expression is None
    assert "What is the capital of France?" in canned.answer and "Demo mode" in canned.answer


def test_different_tasks_get_different_cohorts() -> None:
    def teams(task: str) -> dict[str, list[str]]:
        return {t.name: [m for m, _ in t.members] for t in shape(task)}

    assert teams("Compare Postgres, MySQL and SQLite for a small web app") == {
        "Research": ["Postgres researcher", "MySQL researcher", "SQLite researcher"],
        "Writing": ["Writer", "Reviewer"],
    }
    assert items_in("Compare three databases") == ["Database A", "Database B", "Database C"]
    assert teams("Research the history of the bicycle") == {
        "Research": ["Bicycle researcher", "Sources checker"]
    }
    three = teams("Estimate the cost of a bakery in Porto and write a plan")
    assert list(three) == ["Research", "Numbers", "Writing"]
    assert route("Compare three databases")["path"] == "plan"
    trip = shape("Plan a trip to Lisbon, Porto and Madrid")
    assert [m for m, _ in trip[0].members][:3] == [
        "Lisbon researcher",
        "Porto researcher",
        "Madrid researcher",
    ]
    assert trip[-1].members[0] == ("Writer", "Drafts the plan from the findings.")


async def _planned(task: str) -> tuple[object, ScriptedModel]:
    model = team_model()
    with tempfile.TemporaryDirectory() as scratch:
        offline = offline_settings(make_settings(), Path(scratch))
        async with embedded_services(offline, model) as svc:
            return await plan(offline, svc.llm, svc.tools, task, prompts=svc.prompts), model


async def test_the_demo_model_routes_and_plans_what_is_typed() -> None:
    simple, model = await _planned("What is 2+2?")
    assert simple.path == "direct" and simple.cohort is None  # type: ignore[attr-defined]
    assert Counter(r.agent_name for r in model.requests) == {"router": 1}

    compared, _ = await _planned("Compare Postgres, MySQL and SQLite")
    cohort = compared.cohort  # type: ignore[attr-defined]
    names = [a.name for a in cohort.agents]
    assert names[:2] == ["Orchestrator", "Research lead"]
    assert "SQLite researcher" in names and "Writer" in names
    assert [t.name for t in cohort.teams] == ["Research", "Writing"]

    budget, _ = await _planned("Budget our offsite in Lisbon")  # the worked example stays
    assert "Budget lead" in [a.name for a in budget.cohort.agents]  # type: ignore[attr-defined]


async def test_pace_slows_each_answer() -> None:
    model = team_model(pace_s=0.05)
    request = LLMRequest(
        model="m",
        messages=(ChatMessage(role="user", content="The request:\n\nHi\n\nChoose one path"),),
        agent_name="router",
    )
    task = asyncio.ensure_future(model.complete(request))
    await asyncio.sleep(0)
    assert not task.done()  # still "thinking"
    assert (await task).tool_calls[0].name == "submit_router"


def test_caramba_demo_takes_a_task() -> None:
    """``caramba demo "…"``: a simple question answered directly, a request planned."""
    from typer.testing import CliRunner

    from bots.cli import app

    runner = CliRunner()
    simple = runner.invoke(app, ["demo", "What is 2+2?"], env={"COLUMNS": "200"})
    assert simple.exit_code == 0, simple.output
    assert "router (1 call): direct" in simple.output and "4 (2+2 = 4)" in simple.output
    assert "Proposal for" not in simple.output

    planned = runner.invoke(app, ["demo", "Research the history of the bicycle"])
    assert planned.exit_code == 0, planned.output
    assert "planner (1 call): 4 agents" in planned.output and "Bicycle researcher" in planned.output
    assert "uses the internet" not in planned.output  # the demo is offline, card included
