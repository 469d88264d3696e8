"""One model call of a turn: bounded by what is left of the agent's and the run's token
budgets (so a cap is overshot by at most one bounded answer), reused when an earlier
delivery of the turn saved it, and timed out. With the call keeper (``llm.keeper``) the
process's model is a :class:`TurnCaller` that has a keeper process make the call, so that
an answer in flight outlives this worker (``core.agent.keeper_client``)."""

from __future__ import annotations

import asyncio
from functools import cache
from typing import NamedTuple, Protocol, cast, runtime_checkable

from core.agent import responses
from core.agent.limits import AgentLimits, Breach, estimate_prompt
from core.config import LLMSettings
from core.llm.base import LLMRequest, LLMResponse
from core.services import Services
from core.types.agent import AgentState
from core.types.chat import Usage
from core.types.figures import number, tokens
from core.types.run import RunHead

# An answer shorter than this is not worth a call: the budget counts as spent.
MIN_ANSWER_TOKENS = 64


class Bound(NamedTuple):
    """The answer's token bound, or which budget the call would break (and how)."""

    max_tokens: int
    agent_over: str | None = None
    run_over: Breach | None = None


def bound(
    svc: Services,
    state: AgentState,
    caps: AgentLimits,
    run: RunHead,
    run_usage: Usage,
    chars: int,
) -> Bound:
    """Check the agent's and the run's token caps before the call: its prompt of
    ``chars`` characters (tokens estimated from the agent's last call) plus its answer
    must fit in what is left of both."""
    prompt = estimate_prompt(chars, state.prompt_sample)
    used = state.usage.total_tokens
    agent_left = caps.max_tokens - used - prompt
    if agent_left < MIN_ANSWER_TOKENS:
        return Bound(
            0,
            agent_over=f"used {tokens(used)} (agent limit {number(caps.max_tokens)}); the next "
            f"call needs about {number(prompt)} for its prompt alone",
        )
    run_left = agent_left
    if run.budget is not None:
        run_left = run.budget.tokens - run_usage.total_tokens - prompt
        if run_left < MIN_ANSWER_TOKENS:
            detail = (
                f"the run used {number(run_usage.total_tokens)} of {tokens(run.budget.tokens)}; "
                f"the next call needs about {number(prompt)} for its prompt alone"
            )
            return Bound(0, run_over=Breach("tokens", detail))
    return Bound(min(svc.settings.llm.max_output_tokens, agent_left, run_left))


def llm_deadline(svc: Services) -> float:
    """The longest one model call may take, retries and their waits (back-off, or a
    server's Retry-After up to ``llm.retry_after_max_s``) included."""
    return deadline_s(svc.settings.llm)


def deadline_s(llm: LLMSettings) -> float:
    """:func:`llm_deadline` from the ``[llm]`` settings alone (for the call keeper)."""
    wait = max(llm.backoff_max_s, llm.retry_after_max_s)
    return llm.timeout_s * llm.max_attempts + wait * (llm.max_attempts - 1) + 5


@runtime_checkable
class TurnCaller(Protocol):
    """A model that makes a turn's call itself, saving the answer (the call keeper's
    client): ``(answer, reused)``; raises ``LLMError`` or ``TimeoutError``."""

    async def complete_turn(
        self, svc: Services, request: LLMRequest, seq: int
    ) -> tuple[LLMResponse, bool]: ...


@cache
def _calls_turns(kind: type) -> bool:
    """Whether a model of this class is a :class:`TurnCaller` (a protocol's isinstance
    looks at every attribute, about 15 µs a call; the answer is its class's)."""
    return issubclass(kind, TurnCaller)


async def complete(
    svc: Services, request: LLMRequest, seq: int, saved: responses.SavedResponse | None
) -> tuple[LLMResponse, bool]:
    """The model's answer — the saved one when it answered this very request — kept for a
    later delivery, and whether it was reused. Raises ``LLMError`` or ``TimeoutError``."""
    response, reused, unkept = await answer(svc, request, seq, saved)
    if unkept:
        await responses.save(svc, request, seq, response)
    return response, reused


async def answer(
    svc: Services, request: LLMRequest, seq: int, saved: responses.SavedResponse | None
) -> tuple[LLMResponse, bool, bool]:
    """:func:`complete`'s answer and whether it was reused, and whether it is not kept
    yet (made by this process: its caller keeps it, or decides it need not be)."""
    if saved is not None and saved.fingerprint == responses.fingerprint(request):
        return saved.response, True, False
    if _calls_turns(type(svc.llm)):
        response, reused = await cast(TurnCaller, svc.llm).complete_turn(svc, request, seq)
        return response, reused, False
    # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation.
    async with asyncio.timeout(llm_deadline(svc)):
        response = await svc.llm.complete(request)
    return response, False, True
