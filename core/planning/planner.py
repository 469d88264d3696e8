"""The planner: a cohort for a task, designed by the model or reused from the library
(planning/reuse.py)."""

from __future__ import annotations

from collections.abc import Sequence

from core.config import Settings
from core.library import Library
from core.llm.base import LLM, LLMRequest
from core.planning.design import CohortDesign, DesignRules, design_problems, to_cohort
from core.planning.reuse import library_context, reuse_cohort, reused_entry, shown
from core.planning.structured import Meter, ask_structured
from core.prompts import PromptLibrary
from core.tools.catalogue import catalogue
from core.tools.registry import ToolRegistry
from core.types.chat import ChatMessage
from core.types.cohort import Cohort
from core.types.files import AttachedFile


def pattern_names(prompts: PromptLibrary) -> frozenset[str]:
    """The collaboration patterns: the templates under patterns/ (core/prompts/)."""
    return frozenset(
        n.removeprefix("patterns/").removesuffix(".md.j2")
        for n in prompts.names()
        if n.startswith("patterns/") and n.endswith(".md.j2")
    )


async def design_cohort(
    settings: Settings,
    llm: LLM,
    registry: ToolRegistry,
    prompts: PromptLibrary,
    task: str,
    *,
    library: Library | None = None,
    meter: Meter | None = None,
    files: Sequence[AttachedFile] = (),
) -> Cohort:
    """A validated cohort for ``task`` (system prompts not written yet: prompt_creator).

    A stored cohort the library finds clearly (planning/reuse.py) is returned without a
    planner call (its briefs are rewritten by the prompt creator). Otherwise the model,
    shown the best stored agents and cohorts with their records, designs one; designs
    with problems go back with the problems, up to ``planning.planner_attempts``
    replies, then PlanningError names the last problems.
    """
    reused = await reuse_cohort(library, task)
    if reused is not None:
        return reused
    ctx = await library_context(settings, library, task)
    rules = DesignRules(
        settings=settings,
        registry=registry,
        patterns=pattern_names(prompts),
        reusable={m.entry.id: reused_entry(m) for m in ctx.agents if m.entry.agent},
        reusable_specs={m.entry.id: m.entry.agent for m in ctx.agents if m.entry.agent},
    )
    caps = settings.agents
    text = prompts.render(
        "planning/planner.j2",
        task=task,
        attached=[f.describe() for f in files],
        tool_docs=catalogue(registry),
        patterns=sorted(rules.patterns),
        base_tools=list(caps.base_tools),
        caps={
            "max_depth": caps.max_depth,
            "children_per_agent": caps.children_per_agent,
            "per_run": caps.per_run,
            "tokens_per_run": settings.limits.tokens_per_run,
            "tokens_per_agent": settings.limits.tokens_per_agent,
            "cost_per_run_usd": settings.limits.cost_per_run_usd,
        },
        **shown(ctx),
    )
    request = LLMRequest(
        model=settings.llm.model_for("planner"),
        messages=(ChatMessage(role="user", content=text),),
        agent_name="planner",
    )
    design = await ask_structured(
        llm,
        prompts,
        request,
        CohortDesign,
        stage="planner",
        attempts=settings.planning.planner_attempts,
        meter=meter or Meter(),
        check=lambda d: design_problems(d, rules),
    )
    return to_cohort(task, design, rules)
