"""Planning: router (fast path or plan), planner (cohort design, validated and repaired,
library reuse), prompt creator (draft, critique, refine). Entry point: :func:`plan`."""

from core.planning.design import CohortDesign, DesignRules, design_problems, to_cohort
from core.planning.errors import PlanningError
from core.planning.models import could_not_plan, planning_model
from core.planning.plan import PlanOutcome, plan
from core.planning.planner import design_cohort, reuse_cohort
from core.planning.prompt_creator import PromptCreator
from core.planning.router import RouteDecision, direct_agent_spec, route

__all__ = [
    "CohortDesign",
    "DesignRules",
    "PlanOutcome",
    "PlanningError",
    "PromptCreator",
    "RouteDecision",
    "could_not_plan",
    "design_cohort",
    "design_problems",
    "direct_agent_spec",
    "plan",
    "planning_model",
    "reuse_cohort",
    "route",
    "to_cohort",
]
