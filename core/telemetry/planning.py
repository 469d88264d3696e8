"""The span of a request's planning: under the run's span in the run's trace, with the
router's, the planner's and the prompt creator's model calls as its chat spans
(:func:`core.telemetry.calls.model_called` finds it when no turn is being traced) and
what they spent, summed, on it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.telemetry import tracing
from core.telemetry.ids import remote, run_context
from core.types.chat import Usage

if TYPE_CHECKING:
    from opentelemetry.trace import Span


@dataclass
class TracedPlanning:
    run_id: str
    span: Span
    capture: bool
    usage: Usage = field(default_factory=Usage)
    calls: int = 0

    def spent(self, usage: Usage) -> None:
        self.usage = self.usage + usage
        self.calls += 1


planning_current: ContextVar[TracedPlanning | None] = ContextVar("caramba_planning", default=None)


@contextmanager
def planning(run_id: str, traceparent: str | None) -> Iterator[None]:
    """Around the planning of the request ``run_id``: its model calls are traced under
    one ``caramba.planning`` span, a child of the run's (tracing off: nothing)."""
    active = tracing.active()
    if active is None:
        yield
        return
    from opentelemetry.trace import Status, StatusCode

    trace_id, run_span = run_context(run_id, traceparent)
    span = active.tracer.start_span(
        "caramba.planning",
        context=remote(trace_id, run_span),
        start_time=time.time_ns(),
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "planning",
            "gen_ai.conversation.id": run_id,
            "caramba.run.id": run_id,
        },
    )
    traced = TracedPlanning(run_id, span, active.capture)
    token = planning_current.set(traced)
    try:
        yield
    except BaseException as exc:
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
        raise
    finally:
        planning_current.reset(token)
        attributes: dict[str, Any] = {
            "gen_ai.usage.input_tokens": traced.usage.prompt_tokens,
            "gen_ai.usage.output_tokens": traced.usage.completion_tokens,
            "gen_ai.usage.cost": traced.usage.cost_usd,
            "caramba.cost_usd": traced.usage.cost_usd,
            "caramba.planning.calls": traced.calls,
        }
        span.set_attributes(attributes)
        span.end()
