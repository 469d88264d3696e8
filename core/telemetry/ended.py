"""The spans written when something long-lived ends: an agent (maybe after turns in many
processes) and its run. They began long ago, maybe elsewhere: each is written now with the
time it started and its derived ids, so the spans written before it are its children."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.telemetry.ids import agent_span_id, forced_span, forced_trace, remote
from core.types.agent import AgentState, EndReason

if TYPE_CHECKING:
    from core.telemetry.tracing import TracedTurn


def _ended_span(
    t: TracedTurn,
    span_id: int,
    name: str,
    parent: Any,
    start_s: float,
    attributes: dict[str, Any],
    ok: bool,
    trace_id: int | None = None,
) -> None:
    """Write a span that began long ago, maybe in another process, under its own id."""
    from opentelemetry.trace import Status, StatusCode

    span_token = forced_span.set(span_id)
    trace_token = forced_trace.set(trace_id)
    try:
        span = t.tracing.tracer.start_span(
            name, context=parent, start_time=int(start_s * 1e9), attributes=attributes
        )
    finally:
        forced_span.reset(span_token)
        forced_trace.reset(trace_token)
    if not ok:
        span.set_status(Status(StatusCode.ERROR, attributes.get("caramba.end_reason", "")))
    span.end()


def agent_span(t: TracedTurn, state: AgentState) -> None:
    spec = state.spec
    parent = agent_span_id(t.trace_id, spec.parent_id) if spec.parent_id is not None else t.run_span
    usage = state.usage
    reason = state.end_reason.value if state.end_reason else ""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.id": spec.id,
        "gen_ai.agent.name": spec.name,
        "gen_ai.conversation.id": t.run_id,
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
        "gen_ai.usage.cost": usage.cost_usd,
        "caramba.cost_usd": usage.cost_usd,
        "caramba.agent.role": spec.role,
        "caramba.agent.turns": state.seq,
        "caramba.end_reason": reason,
    }
    if spec.model or t.model:
        attributes["gen_ai.request.model"] = spec.model or t.model
    _ended_span(
        t,
        agent_span_id(t.trace_id, spec.id),
        f"invoke_agent {spec.name}",
        remote(t.trace_id, parent),
        state.created_at,
        attributes,
        state.end_reason is EndReason.FINISHED,
    )


def run_span(t: TracedTurn, root: AgentState) -> None:
    """The run's span: from when its top agent started to now, with the spending of the
    whole tree (the root's own plus what its finished descendants reported)."""
    from opentelemetry.context import Context

    total = root.usage + root.team_usage
    ok = root.end_reason is EndReason.FINISHED
    attributes: dict[str, Any] = {
        "gen_ai.conversation.id": t.run_id,
        "gen_ai.usage.input_tokens": total.prompt_tokens,
        "gen_ai.usage.output_tokens": total.completion_tokens,
        "gen_ai.usage.cost": total.cost_usd,
        "caramba.cost_usd": total.cost_usd,
        "caramba.run.id": t.run_id,
        "caramba.run.status": "completed" if ok else "failed",
        "caramba.end_reason": root.end_reason.value if root.end_reason else "",
    }
    _ended_span(
        t, t.run_span, "caramba.run", Context(), root.created_at, attributes, ok, t.trace_id
    )
