"""Call the model: the turn's one model call (or the answer an earlier delivery saved),
timed out and traced; the calls written in its text read out. Returns
:class:`~core.agent.phases.current.Called`, or the step that ends the turn: the model
failed, or the run was cancelled while it thought (then no tool runs).

Keeping the answer (``core.agent.responses``: a delivery after a crash reuses it instead
of paying for the call again) costs a round trip before the tools run, with the run's
head read in it (was the run cancelled meanwhile?). It is paid when the answer calls a
tool with an effect or one that may take long (not read-only, or network, code, an MCP
server): a kill while such tools run would lose the answer, and a cancelled run must not
run them. It is not paid when every call is to a read-only tool that answers at once
(``finish``, ``calculate``, ``roster``, ``wait_for_messages``, …), to one whose only
effect is written by the save itself (``send_message``: nothing is sent before it), or
there is none: the turn's save comes a moment later and records the answer in the
thread, so only a kill in that moment repeats the model call (as a kill before the
answer's save always could); those tools change nothing before the save and rerun the
same, and a cancel is seen by the next turn.
With the call keeper (``llm.keeper``) the keeper saves every answer itself and the turn
keeps nothing; it reads the head only before tools that need it.

May call ``core.agent`` (calls, text_reply, faults), the store's run head and telemetry;
never the Redis client."""

from __future__ import annotations

import logging
import time

from core import telemetry
from core.agent import calls, faults, responses, text_reply
from core.agent.phases.current import Called, Ready, Turn
from core.agent.steps import Finish, Step
from core.agent.turn_io import clip
from core.errors import LLMError
from core.llm.base import LLMResponse
from core.services import Services
from core.types.agent import EndReason
from core.types.events import LLMCalled

log = logging.getLogger(__name__)


async def call(turn: Turn, ready: Ready) -> Called | Step:
    svc, request = turn.svc, ready.request
    called_at, started = telemetry.clock(), time.time()
    try:
        raw, reused, unkept = await calls.answer(svc, request, turn.job.seq, turn.saved)
    except LLMError as exc:
        telemetry.model_failed(request, exc, called_at)
        return Finish(EndReason.LLM_ERROR, str(exc))
    except TimeoutError as exc:
        telemetry.model_failed(request, exc, called_at)
        detail = f"the model did not answer within {calls.llm_deadline(svc):.0f} s (with retries)"
        return Finish(EndReason.LLM_ERROR, detail)
    took = time.time() - started
    telemetry.model_called(request, raw, called_at, reused)
    response = await text_reply.read(svc, request.model, raw, ready.allowed)
    if reused:
        log.info("turn %s: reused the answer an earlier delivery saved", turn.job)
    head = None
    if not quick(svc, response, ready.allowed):
        if unkept:  # kept before its tools run, the run's head read in the same round trip
            head = await responses.save(svc, request, turn.job.seq, raw, read_head=True)
        if head is None:
            head = await svc.store.run_head(turn.job.run_id)
    await faults.point(svc, "after_llm")
    turn.usage = response.usage
    turn.state.usage = turn.state.usage + response.usage
    if head is not None and head.status.terminal:
        # Cancelled while the model was thinking: stop before any tool runs.
        return Finish(EndReason.CANCELLED, "the run was cancelled")
    _record(turn, ready, response, (started, took))
    return Called(response)


def quick(svc: Services, response: LLMResponse, allowed: list[str]) -> bool:
    """True when every call the answer makes is to a tool of the agent's that only looks
    things up, here and at once (read-only; no network, no code, no MCP server) or whose
    only effect is written by the save (``send_message``), or it makes none. Such tools
    need neither the answer kept first nor the run's cancel checked first (see the
    module's docstring)."""
    for one in response.tool_calls:
        found = svc.tools.get(one.name) if one.name in allowed else None
        if found is None or not (found.read_only or found.in_save):
            return False
        if found.network or found.runs_code or found.server:
            return False
    return True


def _record(turn: Turn, ready: Ready, response: LLMResponse, timed: tuple[float, float]) -> None:
    """The answer joins the thread and the turn's events (``timed``: when the call was
    made and how long the model took)."""
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
            started_at=timed[0],
            duration_s=timed[1],
        )
    )
    state.thread.append(response.as_message())
