"""Planning end to end: router → direct UI agent, or planner → prompt creator → cohort.

A request routed to planning whose model cannot design a team (no valid design, even in
the short form) is not lost: the UI agent answers it directly, as on the fast path, and
:attr:`PlanOutcome.note` says plainly that this model could not design a team and which
setting picks one that can (shown to people with the answer).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal

from core.config import Settings
from core.library import Library
from core.llm.base import LLM
from core.planning.errors import PlanningError
from core.planning.models import could_not_plan, could_not_route
from core.planning.planner import design_cohort
from core.planning.prompt_creator import PromptCreator
from core.planning.router import RouteDecision, direct_agent_spec, route
from core.planning.structured import Meter
from core.prompts import PromptLibrary
from core.tools.registry import ToolRegistry
from core.types._base import Frozen
from core.types.agent import AgentSpec
from core.types.chat import Usage
from core.types.cohort import Cohort
from core.types.files import AttachedFile

log = logging.getLogger(__name__)


class PlanOutcome(Frozen):
    """What planning produced: a direct agent to run, or a cohort to propose."""

    task: str
    path: Literal["direct", "plan"]
    decision: RouteDecision
    # The fast path: the UI agent to run (core.runs.start_run).
    direct: AgentSpec | None = None
    # The planning path: the validated cohort for the approval card.
    cohort: Cohort | None = None
    # Tokens and cost of the planning calls themselves.
    usage: Usage = Usage()
    llm_calls: int = 0
    # For people: why a request routed to planning is answered directly instead.
    note: str = ""

    @property
    def reused(self) -> bool:
        """True when the cohort is a stored one proposed again (cohort.reused_from)."""
        return self.cohort is not None and self.cohort.reused_from is not None


async def plan(
    settings: Settings,
    llm: LLM,
    registry: ToolRegistry,
    task: str,
    *,
    library: Library | None = None,
    prompts: PromptLibrary | None = None,
    files: Sequence[AttachedFile] = (),
) -> PlanOutcome:
    """Route ``task``; plan a cohort for it unless the fast path answers it (the planner
    is told of the ``files`` attached to the request).

    Never fails for want of a valid routing or design (see the module docstring); a
    model that cannot be called at all raises its :class:`core.errors.LLMError`.
    """
    prompts = prompts or PromptLibrary(settings.prompts_dir)
    meter = Meter()
    decision = await route(settings, llm, registry, prompts, task, meter=meter)
    if decision.path == "direct":
        return PlanOutcome(
            task=task,
            path="direct",
            decision=decision,
            direct=direct_agent_spec(settings, registry, draft=decision.answer),
            usage=meter.usage,
            llm_calls=meter.calls,
            # A model that cannot route will never get a team designed: people are told.
            note=could_not_route(decision.reason) if decision.fallback else "",
        )
    try:
        cohort = await design_cohort(
            settings, llm, registry, prompts, task, library=library, meter=meter, files=files
        )
    except PlanningError as failed:
        log.warning("planning with %s gave up, answering directly: %s", failed.model, failed)
        note = could_not_plan(failed)
        return PlanOutcome(
            task=task,
            path="direct",
            decision=decision.model_copy(
                update={
                    "path": "direct",
                    "reason": f"{note} One agent answers instead.",
                    "fallback": True,
                }
            ),
            direct=direct_agent_spec(settings, registry),
            usage=meter.usage,
            llm_calls=meter.calls,
            note=note,
        )
    # New agents get a prompt; a reused cohort's and adapted agents' are rewritten.
    cohort = await PromptCreator(settings, llm, registry, prompts, meter).write_all(cohort)
    return PlanOutcome(
        task=task,
        path="plan",
        decision=decision,
        cohort=cohort,
        usage=meter.usage,
        llm_calls=meter.calls,
    )
