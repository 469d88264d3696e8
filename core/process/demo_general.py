"""The offline demo's agents for any request (the cohorts demo_shapes.py designs): how the
scripted model answers the UI agent of the direct path and the orchestrator, leads and
members of a planned cohort — read from the request, the way a model would.

Direct: one ``calculate`` or ``current_time`` call when there is something to work out,
then ``finish``. Cohort: the orchestrator checks its roster and kicks each lead off; a lead
sends each member its part and waits; a member writes its notes to a file and finishes
with one line; a lead finishes with its members' lines; the orchestrator merges the teams.
The findings are placeholders, said plainly: no real model is asked.
"""

from __future__ import annotations

import re

from core.llm.base import LLMRequest
from core.llm.scripted import Reply, call
from core.process.demo_reading import (
    body,
    called,
    delivered,
    playbook_members,
    system_text,
    tool_results,
)
from core.process.demo_shapes import direct

_TASK = re.compile(r"(?:working on|this task from [^:\n]+|asked):\n\n(.+?)\n\n", re.DOTALL)
_BRIEF = re.compile(r"^Your brief: (.+)$", re.MULTILINE)
_CHILD = re.compile(r"^- (.+?) \(id \S+, (\w+), your child\)", re.MULTILINE)
NOTE = (
    "_Demo mode: the scripted offline model shaped this team from the words of your request; "
    "the findings are placeholders. With a real model each agent does the actual work._"
)


def task_of(request: LLMRequest) -> str:
    """The run's task as the agent's system prompt states it."""
    found = _TASK.search(system_text(request))
    return found.group(1).strip() if found else ""


def role_of(request: LLMRequest) -> str:
    """The agent's role, from the opening of its system prompt (core/prompts/roles/)."""
    text = system_text(request)
    for marker, role in (
        ("You orchestrate a cohort", "orchestrator"),
        ("You lead a team", "lead"),
        ("You are a member of a team", "member"),
        ("You are the voice of Caramba", "ui"),
    ):
        if marker in text:
            return role
    return "solo"


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "notes"


def ui(r: LLMRequest) -> Reply:
    """The direct path: check the draft with one tool call when there is one, answer."""
    task = task_of(r)
    plan = direct(task)
    if plan is None or (plan.expression is None and plan.timezone is None):
        answer = plan.answer if plan else f"Demo mode: no real model to answer “{task}”."
        return Reply(calls=(call("finish", {"result": answer}),))
    tool = "calculate" if plan.expression else "current_time"
    if not called(r, tool):
        args = {"expression": plan.expression} if plan.expression else {"timezone": plan.timezone}
        return Reply(content=plan.answer, calls=(call(tool, args),))
    found = tool_results(r, tool)[-1]
    if plan.expression:
        answer = f"{found.rsplit('=', 1)[-1].strip()} ({found})"
    else:
        answer = f"In {plan.timezone} it is now {found}."
    return Reply(calls=(call("finish", {"result": answer}),))


def orchestrator(r: LLMRequest) -> Reply:
    """Roster; a kick-off to each lead; wait for every lead; merge and answer."""
    if not called(r, "roster"):
        return Reply(content="Who is on the cohort?", calls=(call("roster"),))
    leads = [m.group(1) for m in _CHILD.finditer(tool_results(r, "roster")[0])]
    if leads and not called(r, "send_message"):
        kick = [
            call("send_message", {"to": lead, "body": "Kick-off: your team's part, as planned."})
            for lead in leads
        ]
        return Reply(content="Kicking the teams off.", calls=(*kick, call("wait_for_messages")))
    results = [body(d).strip() for d in delivered(r, "[Result from ")]
    by_lead = [found[0] for lead in leads if (found := delivered(r, f"[Result from {lead}"))]
    if len(by_lead) == len(results):  # in the teams' order, not the order they finished
        results = [body(d).strip() for d in by_lead]
    if len(results) < len(leads):
        return Reply(calls=(call("wait_for_messages"),))
    merged = "\n\n".join(results) or f"Nobody was left on the cohort to work on: {task_of(r)}"
    answer = f"**{task_of(r)}**\n\n{merged}\n\n{NOTE}"
    return Reply(
        content="Every team is done; merging.", calls=(call("finish", {"result": answer}),)
    )


def lead(r: LLMRequest) -> Reply:
    """Send each member its part; wait for them all; finish with the team's lines."""
    members = playbook_members(r)
    if members and not called(r, "send_message"):
        sends = [
            call("send_message", {"to": m, "body": f"Your part: {m}. One line back, please."})
            for m in members
        ]
        return Reply(
            content=f"Fanning out to {len(members)} members.",
            calls=(*sends, call("wait_for_messages")),
        )
    lines = [body(d).strip() for d in delivered(r, "[Result from ")]
    if len(lines) < len(members):
        return Reply(calls=(call("wait_for_messages"),))
    team = r.agent_name.removesuffix(" lead")
    rows = "\n".join(f"- {line}" for line in lines) or f"- {r.agent_name}: did the part alone."
    return Reply(calls=(call("finish", {"result": f"## {team}\n{rows}"}),))


def member(r: LLMRequest) -> Reply:
    """Wait for the part from the lead; write the notes to a file; finish with one line."""
    if not delivered(r, "[Message from "):
        return Reply(calls=(call("wait_for_messages"),))
    name = r.agent_name or "Member"
    path = f"notes/{slug(name)}.md"
    if not called(r, "write_file") and "`write_file`" in system_text(r):
        text = f"# {name}\n\nTask: {task_of(r)}\n\n(placeholder notes: offline demo)\n"
        return Reply(
            content="Writing my notes down.",
            calls=(call("write_file", {"path": path, "content": text}),),
        )
    brief = _BRIEF.search(system_text(r))
    did = brief.group(1).rstrip(".") if brief else "Did its part"
    line = f"{name}: {did} — notes in {path} (placeholder)."
    return Reply(calls=(call("finish", {"result": line}),))


BRAINS = {"ui": ui, "orchestrator": orchestrator, "lead": lead, "member": member}


def agent(r: LLMRequest) -> Reply:
    """The reply for any agent of a general cohort, by its role."""
    brain = BRAINS.get(role_of(r))
    if brain is None:
        return Reply(calls=(call("finish", {"result": "(nothing to do in the demo)"}),))
    return brain(r)
