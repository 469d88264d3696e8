"""Build the turn's request: the agent's thread (and the run's files, for an agent with
file tools), its tools, shaped for the model's rung, bounded by what is left of the
agent's and the run's token budgets. Part of the prepare phase.

May call ``core.agent`` (calls, limits, text_reply, workspace_note) and the tool
registry's schemas; never the Redis client."""

from __future__ import annotations

from core.agent import calls, limits, text_reply
from core.agent.phases.current import Ready, Turn
from core.agent.steps import Finish, Pause, Step
from core.agent.workspace_note import workspace_note
from core.llm.base import LLMRequest
from core.types.agent import AgentStatus, EndReason
from core.types.events import TurnStarted


async def build(turn: Turn) -> Ready | Step:
    """The request, or the step the budgets leave: the agent's cap reached ends it, the
    run's pauses the run (the turn parks)."""
    svc, job, state = turn.svc, turn.job, turn.state
    # Saved with the turn (its first event), not written on its own: one round trip less.
    turn.events = [TurnStarted(run_id=job.run_id, agent_id=job.agent_id, seq=job.seq)]
    state.status = AgentStatus.RUNNING
    spec = state.spec
    allowed = [n for n in spec.tools if n in svc.tools]
    note = await workspace_note(svc, job.run_id, allowed)
    request = LLMRequest(
        model=spec.model or svc.settings.llm.model_for(spec.role),
        messages=(*state.thread, note) if note is not None else tuple(state.thread),
        tools=tuple(t.openai_schema() for t in svc.tools.subset(allowed)),
        run_id=job.run_id,
        agent_id=job.agent_id,
        agent_name=spec.name,
    )
    request, rung = await text_reply.offer(svc, request)
    chars = limits.prompt_chars(request.messages, request.tools)
    budget = calls.bound(svc, state, turn.caps, turn.run, turn.run_usage, chars)
    if budget.agent_over is not None:
        return Finish(EndReason.MAX_TOKENS, budget.agent_over)
    over = budget.run_over
    if over is not None and await limits.hold(svc, job, over, turn.run_usage, turn.run):
        return Pause()
    bounded = max(budget.max_tokens, calls.MIN_ANSWER_TOKENS)
    return Ready(request.model_copy(update={"max_tokens": bounded}), allowed, rung, chars)
