"""The planner: a cohort for a task, designed by the model or reused from the library
(planning/reuse.py)."""

from __future__ import annotations

from collections.abc import Sequence

from core.config import Settings
from core.library import Library
from core.llm.base import LLM, LLMRequest
from core.planning.design import CohortDesign, DesignRules, design_problems, to_cohort
from core.planning.errors import PlanningError
from core.planning.models import planning_model
from core.planning.reuse import library_context, reuse_cohort, reused_entry, shown
from core.planning.simple import SimpleDesign, to_design
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
    replies. A model that cannot write the design is then asked for a flat list of agents
    (planning/simple.py), twice at most; after that PlanningError names the last problems.
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
    meter = meter or Meter()
    request = LLMRequest(
        model=planning_model(settings, "planner"),
        messages=(ChatMessage(role="user", content=text),),
        agent_name="planner",
    )
    try:
        design = await ask_structured(
            llm,
            prompts,
            request,
            CohortDesign,
            stage="planner",
            attempts=settings.planning.planner_attempts,
            meter=meter,
            check=lambda d: design_problems(d, rules),
        )
    except PlanningError as failed:
        design = await _simple_design(llm, prompts, request, task, rules, meter, failed)
    return to_cohort(task, design, rules)


async def _simple_design(
    llm: LLM,
    prompts: PromptLibrary,
    asked: LLMRequest,
    task: str,
    rules: DesignRules,
    meter: Meter,
    failed: PlanningError,
) -> CohortDesign:
    """The last resort: a flat list of agents, the tree built by code. Raises the first
    failure, or this one's when the model did write JSON this time."""
    s = rules.settings
    text = prompts.render(
        "planning/planner_simple.j2",
        task=task,
        tool_docs=[
            {"name": t.name, "description": t.description}
            for t in rules.registry.subset(rules.registry.names())
            if t.name not in s.agents.base_tools
        ],
        caps={"per_run": s.agents.per_run},
    )
    request = asked.model_copy(update={"messages": (ChatMessage(role="user", content=text),)})
    try:
        simple = await ask_structured(
            llm,
            prompts,
            request,
            SimpleDesign,
            stage="planner",
            attempts=2,
            meter=meter,
            check=lambda d: design_problems(to_design(task, d, rules), rules),
        )
    except PlanningError as again:
        raise (again if again.answered_json and not failed.answered_json else failed) from None
    return to_design(task, simple, rules)
