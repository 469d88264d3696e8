"""The offline demo's planning, answered by the scripted model as a model would: the
router's and the planner's submit tools, the prompt creator's draft, critique and
refinement — each read from the request the real planning code sends
(core/planning, templates in core/prompts/planning/)."""

from __future__ import annotations

import re
from typing import Any

from core.llm.base import LLMRequest
from core.llm.scripted import Reply, call
from core.process import demo_shapes
from core.process.demo_team import BUDGET_FILE, LEAD, PARTS

_ROUTER_TASK = re.compile(r"The request:\n\n(.+?)\n\nChoose one path", re.DOTALL)
_PLANNER_TASK = re.compile(r"carry out this task:\n\n(.+?)\n\n(?:The requester|## What)", re.DOTALL)
_COHORT_TASK = re.compile(r"The cohort's task: (.+?)\n\nThe plan:", re.DOTALL)
_OFFERED = re.compile(r"^- `(\w+)` \(", re.MULTILINE)


def is_budget(task: str) -> bool:
    """Whether ``task`` is the demo's budget (its worked example, TEAM_TASK), not another
    request shaped from its words (core/process/demo_shapes.py)."""
    return "budget" in task.lower()


def _task(r: LLMRequest, pattern: re.Pattern[str]) -> str:
    found = pattern.search(r.messages[-1].content or "")
    return found.group(1).strip() if found else ""


ROUTE = {
    "path": "plan",
    "reason": "three independent costs, a file to write and a check: a small team",
    "answer": None,
}


def design() -> dict[str, Any]:
    """The cohort the planner submits: an orchestrator over a fan-out team of three."""
    members = [
        {
            "name": p.member,
            "role": "member",
            "parent": LEAD,
            "team": "Budget",
            "description": f"Costs the {p.what} for the offsite.",
            "tools": ["calculate"],
            "max_tokens": 20_000,
            "max_turns": 6,
        }
        for p in PARTS
    ]
    return {
        "steps": [
            {"title": "Cost the trains, rooms and meals in parallel", "tools": ["calculate"]},
            {"title": f"Add the parts up and write {BUDGET_FILE}", "tools": ["write_file"]},
            {"title": "Check the file's total and answer", "tools": ["read_file", "calculate"]},
        ],
        "agents": [
            {
                "name": "Orchestrator",
                "role": "orchestrator",
                "description": f"Hands the budget to the Budget team, checks {BUDGET_FILE}.",
                "tools": ["read_file", "calculate"],
                "max_tokens": 30_000,
            },
            {
                "name": LEAD,
                "role": "lead",
                "parent": "Orchestrator",
                "team": "Budget",
                "description": f"Splits the budget into parts, merges them into {BUDGET_FILE}.",
                "tools": ["calculate", "write_file"],
                "max_tokens": 30_000,
            },
            *members,
        ],
        "teams": [{"name": "Budget", "lead": LEAD, "pattern": "fan_out"}],
        "budget_usd": 0.5,
        "rationale": "The three costs need nothing from each other: a fan-out team works "
        "them out at once, its lead merges them, the orchestrator checks the sum.",
    }


_AGENT = re.compile(r"The agent: (.+?), role (\w+)\.")
_DRAFTS = {
    "orchestrator": f"Hand the budget to your Budget lead and wait for the team's result. "
    f"Then read {BUDGET_FILE}, add its parts up again with calculate and answer with the "
    "budget and what your check found.",
    "lead": "Send each member its one part with the figures it needs, in one turn. Wait "
    f"until every part is back, add them with calculate, write {BUDGET_FILE} (one line per "
    "part, then the total) and finish with it.",
    "member": "Wait for your part from your lead, work it out with calculate and finish "
    "with one line: the part, the amount in €, and how you got it.",
}
CRITIQUE = "Say what to do when a figure is missing: take it from the task, never guess."
_REFINED = " When a figure is missing, take it from the task; never invent one."


def prompt_creator(r: LLMRequest) -> Reply:
    """A draft per role; one critique; the draft refined with it."""
    text = r.messages[-1].content or ""
    found = _AGENT.search(text)
    role = found.group(2) if found else "member"
    draft = _DRAFTS.get(role, _DRAFTS["member"])
    if not is_budget(_task(r, _COHORT_TASK)):
        name = found.group(1) if found else "the agent"
        draft = (
            f"You are {name}. Do your part of the task as your brief says, keep to your "
            "team's playbook, and finish with a short, sourced result for your parent."
        )
    if "A reviewer's critique" in text:
        return Reply(content=draft + _REFINED)
    if "Critique the draft" in text:
        return Reply(content=CRITIQUE)
    return Reply(content=draft)


def planning(r: LLMRequest) -> Reply | None:
    """The planning stages' replies; None for the agents of the run."""
    if r.agent_name == "router":
        task = _task(r, _ROUTER_TASK)
        route = ROUTE if is_budget(task) else demo_shapes.route(task)
        return Reply(calls=(call("submit_router", route),))
    if r.agent_name == "planner":
        task = _task(r, _PLANNER_TASK)
        if is_budget(task):
            return Reply(content="A fan-out team fits.", calls=(call("submit_planner", design()),))
        offered = frozenset(_OFFERED.findall(r.messages[-1].content or ""))
        shaped = demo_shapes.design(task, offered)
        return Reply(content="Shaped from the request.", calls=(call("submit_planner", shaped),))
    if r.agent_name == "prompt_creator":
        return prompt_creator(r)
    return None
