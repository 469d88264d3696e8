"""The router: a fast path for simple requests, planning for complex ones."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from core.config import Settings
from core.llm.base import LLM, LLMRequest
from core.planning.structured import Meter, ask_structured
from core.prompts import PromptLibrary
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


def direct_tool_names(settings: Settings, registry: ToolRegistry) -> tuple[str, ...]:
    """The registry's read-only tools, plus finish.

    The society's base tools (roster, wait_for_messages) are left out although read-only:
    a lone UI agent has nobody to list or wait for.
    """
    society = set(settings.agents.base_tools) - {"finish"}
    names = [
        n
        for n in registry.names()
        if (t := registry.get(n)) is not None and t.read_only and n not in society
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
    """One router call (re-asked on malformed output); raises PlanningError at the cap."""
    text = prompts.render(
        "planning/router.j2",
        task=task,
        direct_tools=list(direct_tool_names(settings, registry)),
        all_tools=registry.names(),
    )
    request = LLMRequest(
        model=settings.llm.model_for("router"),
        messages=(ChatMessage(role="user", content=text),),
        agent_name="router",
    )
    return await ask_structured(
        llm,
        prompts,
        request,
        RouteDecision,
        stage="router",
        attempts=settings.planning.router_attempts,
        meter=meter or Meter(),
    )
