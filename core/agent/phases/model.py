"""Call the model: the turn's one model call (or the answer an earlier delivery saved),
timed out and traced; the calls written in its text read out. Returns
:class:`~core.agent.phases.current.Called`, or the step that ends the turn: the model
failed, or the run was cancelled while it thought (then no tool runs).

May call ``core.agent`` (calls, text_reply, faults), the store's run head and telemetry;
never the Redis client."""

from __future__ import annotations

import logging

from core import telemetry
from core.agent import calls, faults, text_reply
from core.agent.phases.current import Called, Ready, Turn
from core.agent.steps import Finish, Step
from core.agent.turn_io import clip
from core.errors import LLMError
from core.llm.base import LLMResponse
from core.types.agent import EndReason
from core.types.events import LLMCalled

log = logging.getLogger(__name__)


async def call(turn: Turn, ready: Ready) -> Called | Step:
    svc, request = turn.svc, ready.request
    called_at = telemetry.clock()
    try:
        response, reused, head = await calls.complete_turn(svc, request, turn.job.seq, turn.saved)
    except LLMError as exc:
        telemetry.model_failed(request, exc, called_at)
        return Finish(EndReason.LLM_ERROR, str(exc))
    except TimeoutError as exc:
        telemetry.model_failed(request, exc, called_at)
        detail = f"the model did not answer within {calls.llm_deadline(svc):.0f} s (with retries)"
        return Finish(EndReason.LLM_ERROR, detail)
    telemetry.model_called(request, response, called_at, reused)
    response = await text_reply.read(svc, request.model, response, ready.allowed)
    if reused:
        log.info("turn %s: reused the answer an earlier delivery saved", turn.job)
    await faults.point(svc, "after_llm")
    if head is None:
        head = await svc.store.run_head(turn.job.run_id)
    turn.usage = response.usage
    turn.state.usage = turn.state.usage + response.usage
    if head.status.terminal:
        # Cancelled while the model was thinking: stop before any tool runs.
        return Finish(EndReason.CANCELLED, "the run was cancelled")
    _record(turn, ready, response)
    return Called(response)


def _record(turn: Turn, ready: Ready, response: LLMResponse) -> None:
    """The answer joins the thread and the turn's events."""
    state, usage = turn.state, response.usage
    if usage.prompt_tokens:
        state.prompt_sample = (usage.prompt_tokens, ready.chars)
    turn.events.append(
        LLMCalled(
            run_id=turn.job.run_id,
            agent_id=turn.job.agent_id,
            seq=turn.job.seq,
            model=response.model,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cost_usd=usage.cost_usd,
            agent_tokens=state.usage.total_tokens,
            agent_cost_usd=state.usage.cost_usd,
            text=clip(response.content),
        )
    )
    state.thread.append(response.as_message())
