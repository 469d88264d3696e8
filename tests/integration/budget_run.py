"""A run that reaches its budget, for the chat adapters' tests: a request the router
answers directly, whose lone agent sums four times (some 480 tokens a call) before it
finishes, under a run budget of 800 tokens (its own is the default, far more) — it
pauses after its second call; extended by 100,000 tokens (``[humans]``) it finishes."""

from __future__ import annotations

from typing import Any

from core.config import Settings
from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
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
