"""The offline demo of the product's main job: a request → the router → the planner and
the prompt creator → the proposal → a decision → a cohort at work over the bus → the
result. The real planning and run code (core.planning.plan, embedded.run_proposal, as
``caramba run`` uses them); only the model is scripted (core/process/demo_planning.py,
demo_team.py), and nothing is kept: the run's workspace and library live in a scratch
folder removed at the end.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

from core.config import Settings
from core.llm.base import LLMRequest
from core.llm.scripted import SCRIPTED_MODEL, Reply, ScriptedModel
from core.planning import PlanOutcome, plan
from core.process import demo_general
from core.process.demo_planning import is_budget, planning
from core.process.demo_reading import system_text
from core.process.demo_team import LEAD, PARTS, TEAM_TASK, lead, member, orchestrator
from core.process.embedded import (
    CONSOLE,
    Decider,
    EventCallback,
    embedded_services,
    follow,
    run_proposal,
)
from core.runs import people
from core.runs.control import start_run
from core.services import Services
from core.types.approvals import Choice
from core.types.events import ApprovalAsked, RunEvent
from core.types.people import Person
from core.types.run import RunState

# Decides a tool call waiting for approval (a `[tools.approval]` policy in the config):
# the choice and the reason.
ActionDecider = Callable[[ApprovalAsked], Awaitable[tuple[Choice, str]]]


async def approve_once(_: ApprovalAsked) -> tuple[Choice, str]:
    return "once", ""


def team_model(pace_s: float = 0.0) -> ScriptedModel:
    """The scripted model answering the planning stages and every agent of the demo: the
    budget team for the budget task, a cohort shaped from its words for any other request
    (core/process/demo_general.py). ``pace_s``: seconds each answer takes, so a person can
    watch the agents work (0 in tests)."""
    brains = {"Orchestrator": orchestrator, LEAD: lead, **{p.member: member for p in PARTS}}

    def respond(r: LLMRequest) -> Reply:
        planned = planning(r)
        if planned is not None:
            return planned
        brain = brains.get(r.agent_name)
        if brain is not None and is_budget(system_text(r)):
            return brain(r)
        return demo_general.agent(r)

    return ScriptedModel(responder=respond, pace_s=pace_s)


def offline_settings(settings: Settings, scratch: Path) -> Settings:
    """``settings`` for the demo: every role on the scripted model; the workspace and the
    library (with the deterministic embedder: nothing is kept to search) in ``scratch``."""
    return settings.model_copy(
        update={
            "llm": settings.llm.model_copy(update={"model": SCRIPTED_MODEL, "models": {}}),
            "workspace": settings.workspace.model_copy(update={"dir": scratch / "workspaces"}),
            "library": settings.library.model_copy(
                update={"index_dir": scratch / "library", "embedder": "hashing"}
            ),
        }
    )


def planning_lines(outcome: PlanOutcome, model: ScriptedModel) -> list[str]:
    """What planning did, stage by stage, in plain words."""
    calls = Counter(r.agent_name for r in model.requests)
    lines = [f"router ({calls['router']} call): {outcome.path} — {outcome.decision.reason}"]
    cohort = outcome.cohort
    if cohort is not None:
        teams = ", ".join(f"{t.name} ({t.pattern})" for t in cohort.teams)
        lines += [
            f"planner ({calls['planner']} call): {len(cohort.agents)} agents, "
            f"{len(cohort.steps)} steps, team {teams or 'none'}",
            f"prompt creator ({calls['prompt_creator']} calls): a system prompt per agent, "
            "drafted, critiqued and refined",
        ]
    return lines


async def run_demo(
    settings: Settings,
    ask: Decider,
    *,
    on_event: EventCallback | None = None,
    on_message: Callable[[str], None] = print,
    person: Person = CONSOLE,
    timeout_s: float = 60,
    pace_s: float = 0.0,
    task: str = TEAM_TASK,
    decide_action: ActionDecider = approve_once,
) -> RunState:
    """Plan ``task`` (the budget of :data:`TEAM_TASK` by default), answer it directly or
    let ``ask`` decide on the proposal and run it; the final state. ``pace_s``: seconds
    each scripted answer takes (a person watching). A tool call that waits for approval is
    decided by ``decide_action`` as ``person``."""
    model = team_model(pace_s)
    with tempfile.TemporaryDirectory(prefix="caramba-demo-") as scratch:
        offline = offline_settings(settings, Path(scratch))
        async with embedded_services(offline, model) as svc:
            on_event = _deciding(svc, person, decide_action, on_event)
            outcome = await plan(offline, svc.llm, svc.tools, task, prompts=svc.prompts)
            for line in planning_lines(outcome, model):
                on_message(line)
            limit = timeout_s + 100 * pace_s  # room for the paced answers
            if outcome.direct is not None:
                run_id = await start_run(svc, task, outcome.direct, requested_by=person.id)
                return await follow(svc, run_id, on_event, limit)
            assert outcome.cohort is not None, "planning ends direct or with a cohort"
            return await run_proposal(
                svc,
                task,
                outcome.cohort,
                ask,
                on_event=on_event,
                on_message=on_message,
                person=person,
                timeout_s=limit,
            )


def _deciding(
    svc: Services, person: Person, decide: ActionDecider, on_event: EventCallback | None
) -> EventCallback:
    """``on_event``, then a tool call that waits for approval decided through the people
    room, as ``person``."""

    async def seen(event: RunEvent) -> None:
        if on_event is not None:
            shown = on_event(event)
            if shown is not None:
                await shown
        if isinstance(event, ApprovalAsked):
            choice, reason = await decide(event)
            await people.approve_action(
                svc, event.run_id, event.request.id, person, choice, reason=reason
            )

    return seen
