"""Resolve the next step from what the turn did: the end ladder first (the agent called
``finish``, a reply without a call ended it, it repeated itself, or it reached its token,
cost or turn cap), then a question for a person or a wait for messages, else it runs
again. Pure: it reads the turn and its tools' context, and sets the agent's result.

May call nothing outside the turn (no I/O)."""

from __future__ import annotations

from core.agent.phases.current import Ran, Turn
from core.agent.steps import Finish, RunAgain, Step, Wait
from core.types.agent import EndReason
from core.types.figures import exact_cost, number, tokens


def next_step(turn: Turn, ran: Ran) -> Step:
    ctx = turn.io.ctx
    end = _end(turn, ran)
    if end is not None:
        return end
    if ctx.question is not None:
        return Wait(question=ctx.question)
    if turn.io.approval is not None:
        return Wait()  # a call waits for a person's approval (core.agent.approvals)
    return Wait() if ctx.wait else RunAgain()


def _end(turn: Turn, ran: Ran) -> Finish | None:
    state, caps, ctx = turn.state, turn.caps, turn.io.ctx
    # The seq the agent would run next: its cap counts this turn.
    turns = turn.expected + 1
    if ctx.finish_result is not None:
        state.result = ctx.finish_result
        return Finish(EndReason.FINISHED)
    if ran.text_end is not None:
        return Finish(*ran.text_end)
    if ran.stalled:
        repeats = turn.svc.settings.limits.stall_repeats
        return Finish(
            EndReason.STALLED,
            f"repeated the same call {repeats} times in a row: {state.recent_calls[-1][:200]}",
        )
    if state.usage.total_tokens >= caps.max_tokens:
        return Finish(
            EndReason.MAX_TOKENS,
            f"used {tokens(state.usage.total_tokens)} (agent limit {number(caps.max_tokens)})",
        )
    if state.usage.cost_usd >= caps.max_cost_usd:
        return Finish(
            EndReason.MAX_COST,
            f"spent {exact_cost(state.usage.cost_usd)} "
            f"(agent limit {exact_cost(caps.max_cost_usd)})",
        )
    if turns >= caps.max_turns:
        return Finish(
            EndReason.MAX_TURNS,
            f"took {turns} turns without calling finish (limit {caps.max_turns})",
        )
    return None
