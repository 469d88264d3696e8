"""Ending agents (and, with the root agent, the run): the commit phase's save of a
:class:`~core.agent.steps.Finish`. May call the store's commit and the turn's writes
(``TurnIO``); never the Redis client."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from core.state.store import RunChange, Saved, TotalsChange, transition
from core.types.agent import AgentState, AgentStatus, EndReason
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
    lease: tuple[str, str] | None = None,
) -> Saved:
    """Save the agent as finished/failed; its result (or failure) goes to its parent as a
    message (its wake-up claimed in the same script, ``lease`` released); if it is the
    run's root, the run ends too. An agent with a parent is never the root: its end is
    one script, without the run's record or usage read."""
    svc, state = io.svc, io.state
    ok = reason is EndReason.FINISHED
    state.status = AgentStatus.FINISHED if ok else AgentStatus.FAILED
    state.end_reason = reason
    state.end_detail = detail
    state.updated_at = time.time()
    events = [*events, *_end_events(state, reason, detail)]
    if reason is not EndReason.CANCELLED:
        io.send_result_to_parent(
            ok,
            state.result
            if ok and state.result
            else f"{state.spec.name} stopped without a result: {detail}",
        )
    events = [*events, *io.events()]
    # The run's totals: its usage as read (the root's turn start read it) with this turn's.
    change = None if state.spec.parent_id else TotalsChange(_finish_run_with(state, reason))
    # Saved by this call (its reply lost or not): the caller does the follow-ups.
    return await svc.store.commit_turn(
        state, expected_seq, events, usage, change, writes=io.writes(), after=io.after_save(lease)
    )


def _end_events(state: AgentState, reason: EndReason, detail: str) -> list[RunEvent]:
    """The agent's end, and the error people see when it failed (not when cancelled)."""
    run_id, agent_id, spent = state.run_id, state.spec.id, state.usage + state.team_usage
    events: list[RunEvent] = [
        AgentFinished(
            run_id=run_id,
            agent_id=agent_id,
            reason=reason,
            result=state.result,
            detail=detail,
            tokens=state.usage.total_tokens,
            cost_usd=state.usage.cost_usd,
            subtree_tokens=spent.total_tokens,
            subtree_cost_usd=spent.cost_usd,
        )
    ]
    if reason is not EndReason.FINISHED and reason is not EndReason.CANCELLED:
        events.append(
            ErrorRaised(
                run_id=run_id,
                agent_id=agent_id,
                message=f"{state.spec.name} stopped: {detail}",
                hint=_HINTS.get(reason, ""),
            )
        )
    return events


def _finish_run_with(state: AgentState, reason: EndReason) -> Callable[[Usage], RunChange]:
    return lambda totals: _finish_run(state, reason, totals)


def _finish_run(state: AgentState, reason: EndReason, totals: Usage) -> RunChange:
    """The run ends with its root agent (completed or failed), once."""
    ok, run_id, agent_id = reason is EndReason.FINISHED, state.run_id, state.spec.id

    def change(run: RunState) -> tuple[RunState | None, list[RunEvent]]:
        if run.root_agent_id != agent_id or run.status.terminal:
            return None, []
        to = RunStatus.COMPLETED if ok else RunStatus.FAILED
        step = transition(run, to, by=agent_id, note=reason.value)
        if not step.ok:
            return None, []
        new = step.run
        new.result = state.result
        new.error = None if ok else state.end_detail
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

    return change
