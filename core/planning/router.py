"""The router: a fast path for simple requests, planning for complex ones.

A model that cannot route (no usable JSON) never fails the request: a reply that says the
path in words (``plan.``, ``Path: direct``) is taken at its word; otherwise the request
takes the direct path — the UI agent answers, which works with any model — and the
decision's reason says why.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from core.config import Settings
from core.llm.base import LLM, LLMRequest
from core.planning.errors import PlanningError
from core.planning.models import planning_model
from core.planning.structured import Meter, ask_structured
from core.prompts import PromptLibrary
from core.tools.approval import direct_safe
from core.tools.registry import ToolRegistry
from core.types.agent import AgentSpec
from core.types.chat import ChatMessage

DIRECT_AGENT_NAME = "Caramba"


class RouteDecision(BaseModel):
    """What the router decided, and why."""

    path: Literal["direct", "plan"]
    reason: str = Field(min_length=1)
    # A draft answer for the direct path (the UI agent may use or check it).
    answer: str | None = None
    # True when the model could not route and the direct path was taken for it.
    fallback: SkipJsonSchema[bool] = False


# A reply that opens with the path alone ("plan.", "Direct", "Path: plan") or names it
# ("path = direct"); "Plan your trip…" or "Direct flights…" say nothing about routing.
_OPENS = re.compile(
    r"\W*(?:(?:path|route|decision|answer)\s*[:=-]\s*)?"
    r"[\"'*`]*(direct|plan)[\"'*`]*[ \t]*(?:[.:!,;\n]|$)",
    re.IGNORECASE,
)
_NAMES = re.compile(r"\b(?:path|route)[\"']?\s*[:=]\s*[\"']?(direct|plan)\b", re.IGNORECASE)


def decided_in(text: str) -> RouteDecision | None:
    """The path a reply without JSON states clearly, or None."""
    found = _OPENS.match(text) or _NAMES.search(text)
    if found is None:
        return None
    path = found.group(1).lower()
    return RouteDecision(
        path="plan" if path == "plan" else "direct",
        reason=f"the router said {path!r} in words, not in JSON",
    )


def direct_tool_names(settings: Settings, registry: ToolRegistry) -> tuple[str, ...]:
    """The registry's tools that are safe with nobody's approval, plus finish: read-only,
    closed-world (no internet, no outside system: an MCP tool that does not say it is
    read-only and closed-world is left out) and asking nobody (``core.tools.approval``).

    The society's base tools (roster, wait_for_messages) are left out although read-only:
    a lone UI agent has nobody to list or wait for.
    """
    society = set(settings.agents.base_tools) - {"finish"}
    policy = settings.tools.approval
    names = [
        n
        for n in registry.names()
        if (t := registry.get(n)) is not None and direct_safe(policy, t) and n not in society
    ]
    return tuple(dict.fromkeys([*names, "finish"]))


def direct_agent_spec(
    settings: Settings, registry: ToolRegistry, *, draft: str | None = None
) -> AgentSpec:
    """The UI agent that answers a fast-path request (run it with core.runs.start_run)."""
    return AgentSpec(
        name=DIRECT_AGENT_NAME,
        role="ui",
        tools=direct_tool_names(settings, registry),
        model=settings.llm.model_for("ui"),
        system_prompt=f"A draft answer to check and improve:\n{draft}" if draft else "",
        description="Answers simple requests directly in the chat.",
    )


async def route(
    settings: Settings,
    llm: LLM,
    registry: ToolRegistry,
    prompts: PromptLibrary,
    task: str,
    *,
    meter: Meter | None = None,
) -> RouteDecision:
    """One router call, re-asked on malformed output; a model that cannot route gets the
    direct path (see the module docstring)."""
    text = prompts.render(
        "planning/router.j2",
        task=task,
        direct_tools=list(direct_tool_names(settings, registry)),
        all_tools=registry.names(),
    )
    request = LLMRequest(
        model=planning_model(settings, "router"),
        messages=(ChatMessage(role="user", content=text),),
        agent_name="router",
    )
    try:
        return await ask_structured(
            llm,
            prompts,
            request,
            RouteDecision,
            stage="router",
            attempts=settings.planning.router_attempts,
            meter=meter or Meter(),
            from_text=decided_in,
        )
    except PlanningError as failed:
        if failed.answered_json:
            why = f"its routing answers had errors ({'; '.join(failed.errors)})"
        else:
            why = "it did not answer in the JSON routing needs"
        return RouteDecision(
            path="direct",
            reason=f"The model '{request.model}' could not route this request ({why}), "
            "so one agent answers it directly.",
            fallback=True,
        )
