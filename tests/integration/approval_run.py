"""A run whose agent's tool call needs a person's approval, for the chat adapters'
scenario tests: a planned request (one agent, Writer, with ``write_file``, which
``[tools.approval] tools`` marks) whose agent saves a report — denied once, it tries
again; approved once, the file is written and it finishes. The scripted model records
every request, so a test reads what the agent was told (the denial's reason)."""

from __future__ import annotations

from typing import Any

from core.config import Settings
from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from tests.planning_helpers import ROUTE_PLAN, as_json, prompt_writer

TASK = "Write the quarterly report into a file."
SECRET = "sk-abcdefghijklmnop0123"
WRITE = {"path": "outputs/report.md", "content": f"Q3 report (key {SECRET})"}
REASON = "Saving the report where you will get it."
DONE = "The report is in outputs/report.md."
DENIAL = "not in outputs, please"


def design() -> dict[str, Any]:
    return {
        "steps": [{"title": "Write the report", "tools": ["write_file"]}],
        "agents": [
            {
                "name": "Writer",
                "role": "orchestrator",
                "description": "Writes the report into a file.",
                "tools": ["write_file"],
            }
        ],
        "rationale": "one agent is enough",
    }


def _writer(request: LLMRequest) -> Reply:
    if "The agent: " in (request.messages[-1].content or ""):
        return prompt_writer(request)
    results = [m for m in request.messages if m.role == "tool"]
    if (
        results
        and "outputs/report.md" in (results[-1].content or "")
        and "Denied" not in (results[-1].content or "")
    ):
        return Reply(calls=(call("finish", {"result": DONE}),))
    return Reply(content=REASON, calls=(call("write_file", WRITE),))


def writer() -> ScriptedModel:
    """The model: routing to a plan, the design above, the prompt creator's drafts, and
    Writer, which calls write_file until a call of it ran, then finishes."""
    model = ScriptedModel(responder=_writer)
    model.script("router", ROUTE_PLAN)
    return model.script("planner", as_json(design()))


def asking(s: Settings) -> Settings:
    """``s`` with write_file asking a person before each call."""
    tools = s.tools.model_copy(
        update={"approval": s.tools.approval.model_copy(update={"tools": ("write_file",)})}
    )
    return s.model_copy(update={"tools": tools})


def told(model: ScriptedModel) -> list[str]:
    """What Writer read as its tool calls' results, in order (each request's last)."""
    seen: list[str] = []
    for request in model.requests:
        if request.agent_name != "Writer":
            continue
        results = [m.content or "" for m in request.messages if m.role == "tool"]
        if results and results[-1] not in seen:
            seen.append(results[-1])
    return seen
