"""A run that reaches its budget, for the chat adapters' tests: a request the router
answers directly, whose lone agent sums four times (some 480 tokens a call) before it
finishes, under a run budget of 800 tokens (its own is the default, far more) — it
pauses after its second call; extended by 100,000 tokens (``[humans]``) it finishes.
And a planned request that pauses at the budget its planner designed (below)."""

from __future__ import annotations

from typing import Any

from core.config import Settings
from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from tests.planning_helpers import ROUTE_PLAN, as_json, prompt_writer
from tests.scenarios import calls_made

DONE = "Done after 4 sums."
TASK = "Add up the numbers one by one."


def _sums(request: LLMRequest) -> Reply:
    n = calls_made(request, "calculate")
    if n < 4:
        return Reply(calls=(call("calculate", {"expression": f"{n} + 1"}),))
    return Reply(calls=(call("finish", {"result": DONE}),))


def spender() -> ScriptedModel:
    """The model: the router sends the request to one agent, which sums until it is done."""
    model = ScriptedModel(responder=_sums, cost_per_call_usd=0.001)
    direct = {"path": "direct", "reason": "a simple question"}
    return model.script("router", Reply(calls=(call("submit_router", direct),)))


def tiny_budget(s: Settings, **more: Any) -> Settings:
    """``s`` with runs limited to 800 tokens and extended by 100,000 at a time."""
    limits = s.limits.model_copy(update={"tokens_per_run": 800})
    humans = s.humans.model_copy(update={"extend_tokens": 100_000})
    return s.model_copy(update={"limits": limits, "humans": humans, **more})


# A designed cohort that reaches the budget its planner gave it (not the configured
# ceiling): the router plans, the planner designs one agent with 20,000 tokens and the
# run's budget_usd of $0.03; the agent sums as above at a cent a call, so the run pauses
# at $0.03 before its fourth call; extended (by [humans] extend_cost_usd) it finishes.
PLANNED_TASK = "Add up the numbers one by one, as a planned team."
PLANNED_TOKENS = 20_000
PLANNED_USD = 0.03


def planned_design() -> dict[str, Any]:
    """The planner's design: one agent, Summer, that adds up, on a small budget."""
    return {
        "steps": [{"title": "Add up", "tools": ["calculate"]}],
        "agents": [
            {
                "name": "Summer",
                "role": "orchestrator",
                "description": "Adds the numbers up one by one.",
                "tools": ["calculate"],
                "max_tokens": PLANNED_TOKENS,
            }
        ],
        "budget_usd": PLANNED_USD,
        "rationale": "one agent is enough",
    }


def planned_spender() -> ScriptedModel:
    """The model of a planned request: routing, the design above, the prompt creator's
    drafts, and Summer's sums at a cent a call (planning's calls are the planning's)."""

    def respond(request: LLMRequest) -> Reply:
        if "The agent: " in (request.messages[-1].content or ""):
            return prompt_writer(request)
        return _sums(request)

    model = ScriptedModel(responder=respond, cost_per_call_usd=0.01)
    model.script("router", ROUTE_PLAN)
    return model.script("planner", as_json(planned_design()))
