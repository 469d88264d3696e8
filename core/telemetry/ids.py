"""A run's trace and its agents' span ids, the same in every process."""

from __future__ import annotations

import hashlib
from contextvars import ContextVar
from typing import Any

# The ids the next span must take (an agent's or a run's, derived), read by the id
# generator of the provider (core.telemetry._sdk).
forced_trace: ContextVar[int | None] = ContextVar("caramba_forced_trace", default=None)
forced_span: ContextVar[int | None] = ContextVar("caramba_forced_span", default=None)


def parse_traceparent(value: str | None) -> tuple[int, int] | None:
    """``(trace id, span id)`` of a W3C traceparent, or None if it is not one."""
    parts = (value or "").split("-")
    if len(parts) != 4 or len(parts[1]) != 32 or len(parts[2]) != 16:
        return None
    try:
        trace_id, span_id = int(parts[1], 16), int(parts[2], 16)
    except ValueError:
        return None
    return (trace_id, span_id) if trace_id and span_id else None


def run_context(run_id: str, traceparent: str | None) -> tuple[int, int]:
    """The run's trace id and span id: its stored traceparent, else derived from its id
    (a run recorded while tracing was off still has one trace)."""
    parsed = parse_traceparent(traceparent)
    if parsed is not None:
        return parsed
    digest = hashlib.sha256(f"caramba-run:{run_id}".encode()).digest()
    return int.from_bytes(digest[:16], "big") or 1, int.from_bytes(digest[16:24], "big") or 1


def agent_span_id(trace_id: int, agent_id: str) -> int:
    """An agent's span id, the same in every process."""
    digest = hashlib.sha256(f"{trace_id:032x}:{agent_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") or 1


def remote(trace_id: int, span_id: int) -> Any:
    """A context whose current span is the (remote) span ``span_id`` of ``trace_id``."""
    from opentelemetry import trace

    ctx = trace.SpanContext(
        trace_id, span_id, is_remote=True, trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED)
    )
    return trace.set_span_in_context(trace.NonRecordingSpan(ctx))
