"""The prompt creator: each agent's own prompt, drafted, critiqued and refined.

Per agent: one draft, then up to ``planning.reflection_rounds`` rounds of critique and
refinement (0 = off); a critique that starts with ``LGTM`` ends the rounds early. Agents
are written concurrently, at most ``planning.prompt_concurrency`` at a time. The text
becomes ``AgentSpec.system_prompt``, appended to the role's template when the agent starts.

Agents reused from the library keep their prompt when the planner reused them as is. The
agents of a cohort proposed again (``cohort.reused_from``) and agents the planner adapted
have it rewritten for the new task in one call each (``prompt_adapt.j2``): a stored brief
names its old run's data, audience and deliverable in its own words, rarely the old task
verbatim, so replacing the task's text would leave them. Should that call answer nothing,
the old task is replaced where it appears and the new one stated first.
"""

from __future__ import annotations

import asyncio
from typing import Any

from core import telemetry
from core.config import Settings
from core.llm.base import LLM, LLMRequest
from core.llm.text_calls import strip_reasoning
from core.planning.models import planning_model
from core.planning.structured import Meter
from core.prompts import PromptLibrary
from core.tools.registry import ToolRegistry
from core.types.agent import AgentSpec
from core.types.chat import ChatMessage
from core.types.cohort import Cohort

APPROVED = "LGTM"


class PromptCreator:
    """Writes the agents' prompts of a cohort (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        llm: LLM,
        registry: ToolRegistry,
        prompts: PromptLibrary,
        meter: Meter | None = None,
    ) -> None:
        self.settings = settings
        self.llm = llm
        self.registry = registry
        self.prompts = prompts
        self.meter = meter or Meter()

    async def write_all(self, cohort: Cohort) -> Cohort:
        """The cohort with every agent lacking a prompt given one."""
        limit = asyncio.Semaphore(self.settings.planning.prompt_concurrency)

        reused = cohort.reused_from
        adapted = {r.agent_id for r in cohort.reused if r.adapt}

        async def one(spec: AgentSpec) -> AgentSpec:
            adapt = bool(spec.system_prompt) and (reused is not None or spec.id in adapted)
            if spec.system_prompt and not adapt:
                return spec
            async with limit:
                if adapt:
                    text = await self.adapt(cohort, spec, reused.task if reused else "")
                else:
                    text = await self.write(cohort, spec)
            return spec.model_copy(update={"system_prompt": text})

        agents = await asyncio.gather(*(one(a) for a in cohort.agents))
        return cohort.model_copy(update={"agents": tuple(agents)})

    async def write(self, cohort: Cohort, spec: AgentSpec) -> str:
        """Draft, then critique and refine for the configured number of rounds."""
        context = self._context(cohort, spec)
        draft = await self._ask(spec, "planning/prompt_draft.j2", context) or spec.description
        for _ in range(self.settings.planning.reflection_rounds):
            critique = await self._ask(spec, "planning/prompt_critique.j2", context, draft=draft)
            if not critique or critique.upper().startswith(APPROVED):
                break
            refined = await self._ask(
                spec, "planning/prompt_refine.j2", context, draft=draft, critique=critique
            )
            draft = refined or draft
        return draft

    async def adapt(self, cohort: Cohort, spec: AgentSpec, previous_task: str = "") -> str:
        """The stored prompt of ``spec`` rewritten for ``cohort.task`` (``previous_task``:
        the task it was written for, when known)."""
        context = self._context(cohort, spec)
        text = await self._ask(
            spec,
            "planning/prompt_adapt.j2",
            context,
            previous_task=previous_task,
            stored=spec.system_prompt,
        )
        return text or replace_task(spec.system_prompt, previous_task, cohort.task)

    async def _ask(
        self, spec: AgentSpec, template: str, context: dict[str, Any], **extra: str
    ) -> str:
        text = self.prompts.render(template, **context, **extra)
        request = LLMRequest(
            model=planning_model(self.settings, "prompt_creator"),
            messages=(ChatMessage(role="user", content=text),),
            agent_name="prompt_creator",
            agent_id=spec.id,
        )
        called_at = telemetry.clock()
        response = await self.llm.complete(request)
        telemetry.model_called(request, response, called_at)
        self.meter.add(response)
        # Reasoning models write <think>…</think> first: only the text after it is the prompt.
        return strip_reasoning(response.content)

    def _context(self, cohort: Cohort, spec: AgentSpec) -> dict[str, Any]:
        by_id = {a.id: a for a in cohort.agents}
        parent = by_id.get(spec.parent_id or "")
        team = next((t for t in cohort.teams if t.id == spec.team_id), None)
        return {
            "task": cohort.task,
            "agent": {
                "name": spec.name,
                "role": spec.role,
                "description": spec.description,
                "parent": parent.name if parent else "",
                "children": [a.name for a in cohort.children_of(spec.id)],
                "team": team.name if team else "",
                "pattern": team.pattern if team else "",
            },
            "tool_docs": [
                {"name": t.name, "description": t.description}
                for t in self.registry.subset(spec.tools)
            ],
            "steps": [s.title for s in cohort.steps],
        }


def replace_task(prompt: str, previous_task: str, task: str) -> str:
    """The least rewriting of a stored prompt: the old task replaced where it appears,
    the new one stated first."""
    if previous_task:
        prompt = prompt.replace(previous_task, task)
    return f"The task now: {task}\n\n{prompt}"
