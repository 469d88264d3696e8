"""Which model plans, and what people are told when it cannot.

Per-role models are the way to plan with a strong model and work with a cheap one:
``[llm.models]`` names a model per role; ``planning`` there covers the router, the planner
and the prompt creator at once (each may still have an entry of its own), else they use
``llm.model`` like everyone else.
"""

from __future__ import annotations

from core.config import Settings
from core.planning.errors import PlanningError

PLANNING_ROLES = ("router", "planner", "prompt_creator")
# The [llm.models] entry that covers every planning role.
PLANNING = "planning"


def planning_model(settings: Settings, role: str) -> str:
    """The model of planning role ``role``: its own entry, else the planning one, else
    ``llm.model``."""
    models = settings.llm.models
    return models.get(role) or models.get(PLANNING) or settings.llm.model


def could_not_plan(error: PlanningError) -> str:
    """The sentence people see when the planning model could not design a team."""
    model = error.model or "the planning model"
    if error.answered_json:
        why = "its designs did not fit the planner's rules"
    else:
        why = "it did not answer in the JSON the planner needs"
    return f"The model '{model}' could not design a team ({why}). {STRONGER}"


# What to do about a planning model that cannot route or design.
STRONGER = (
    'Pick a stronger planning model: set planning = "…" under [llm.models] in config.toml '
    "(or CARAMBA_LLM__MODELS__PLANNING=…); the agents can keep the cheap one."
)


def could_not_route(reason: str) -> str:
    """The sentence people see when the router's model could not route (the request was
    answered directly, and no team will be proposed with this model)."""
    return f"{reason} {STRONGER}"
