"""Ending agents (and, with the root agent, the run)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from core.state.store import transition
from core.types.agent import AgentStatus, EndReason
from core.types.chat import Usage
from core.types.events import AgentFinished, ErrorRaised, RunEvent, RunFinished
from core.types.run import RunState, RunStatus

if TYPE_CHECKING:
    from core.agent.turn_io import TurnIO

_HINTS: dict[EndReason, str] = {
    EndReason.LLM_ERROR: "check the model, llm.api_base and the API key with `caramba doctor`",
    EndReason.MAX_TURNS: "raise limits.turns_per_agent or make the task smaller",
    EndReason.MAX_TOKENS: "raise limits.tokens_per_agent / limits.tokens_per_run",
    EndReason.MAX_COST: "raise limits.cost_per_run_usd or the agent's budget",
    EndReason.WALL_CLOCK: "raise limits.wall_clock_s",
    EndReason.STALLED: "the model was looping; rephrase the task or use a stronger model",
    EndReason.QUARANTINED: "a turn kept crashing its worker; see the worker logs",
}


async def end_agent(
    io: TurnIO,
    expected_seq: int,
    events: list[RunEvent],
    usage: Usage,
    reason: EndReason,
    detail: str,
) -> bool:
    """Save the agent as finished/failed; its result (or failure) goes to its parent as a
    message; if it is the run's root, the run ends too."""
    svc, state = io.svc, io.state
    ok = reason is EndReason.FINISHED
    state.status = AgentStatus.FINISHED if ok else AgentStatus.FAILED
    state.end_reason = reason
    state.end_detail = detail
    state.updated_at = time.time()
    run_id, agent_id = state.run_id, state.spec.id
    events = [
        *events,
        AgentFinished(
            run_id=run_id,
            agent_id=agent_id,
            reason=reason,
            result=state.result,
            detail=detail,
            tokens=state.usage.total_tokens,
            cost_usd=state.usage.cost_usd,
            subtree_tokens=(state.usage + state.team_usage).total_tokens,
            subtree_cost_usd=(state.usage + state.team_usage).cost_usd,
        ),
    ]
    if not ok and reason is not EndReason.CANCELLED:
        events.append(
            ErrorRaised(
                run_id=run_id,
                agent_id=agent_id,
                message=f"{state.spec.name} stopped: {detail}",
                hint=_HINTS.get(reason, ""),
            )
        )
    if reason is not EndReason.CANCELLED:
        io.send_result_to_parent(
            ok,
            state.result
            if ok and state.result
            else f"{state.spec.name} stopped without a result: {detail}",
        )
    events = [*events, *io.events()]
    totals = (await svc.store.run_usage(run_id)) + usage

    def finish_run(run: RunState) -> tuple[RunState | None, list[RunEvent]]:
        if run.root_agent_id != agent_id or run.status.terminal:
            return None, []
        to = RunStatus.COMPLETED if ok else RunStatus.FAILED
        step = transition(run, to, by=agent_id, note=reason.value)
        if not step.ok:
            return None, []
        new = step.run
        new.result = state.result
        new.error = None if ok else detail
        return new, [
            RunFinished(
                run_id=run_id,
                agent_id=agent_id,
                status=to,
                result=new.result,
                error=new.error,
                tokens=totals.total_tokens,
                cost_usd=totals.cost_usd,
            )
        ]

    # Saved by this call (its reply lost or not): the caller does the follow-ups.
    saved = await svc.store.commit_turn(
        state, expected_seq, events, usage, finish_run, writes=io.writes()
    )
    return saved.saved
