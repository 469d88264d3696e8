"""The spans of runs, agents, turns, model calls and tool calls (see the package's doc)."""

from __future__ import annotations

import logging
import secrets
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from core.config_observe import TelemetrySettings
from core.telemetry.ended import agent_span, run_span
from core.telemetry.ids import agent_span_id, remote, run_context
from core.types.agent import AgentState

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span, Tracer


log = logging.getLogger(__name__)


@dataclass
class _Tracing:
    provider: TracerProvider
    tracer: Tracer
    capture: bool
    settings: TelemetrySettings | None = None


_tracing: _Tracing | None = None


# --- set-up --------------------------------------------------------------------------


def setup(settings: TelemetrySettings) -> None:
    """Send spans to the OTLP/HTTP endpoint when ``settings.enabled`` (once per process;
    called when a process assembles its services). Off: nothing happens."""
    if not settings.enabled or (_tracing is not None and _tracing.settings == settings):
        return
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    exporter = OTLPSpanExporter(endpoint=settings.otlp_endpoint or None)
    install(
        exporter,
        batch=True,
        capture_content=settings.capture_content,
        service_name=settings.service_name,
    )
    assert _tracing is not None
    _tracing.settings = settings
    log.info("tracing on: spans go to %s", settings.otlp_endpoint or "the OTLP default")


def install(
    exporter: SpanExporter,
    *,
    batch: bool = False,
    capture_content: bool = False,
    service_name: str = "caramba",
) -> TracerProvider:
    """Trace into ``exporter`` from now on (tests: an ``InMemorySpanExporter``)."""
    global _tracing
    from core.telemetry._sdk import provider_for

    if _tracing is not None:
        uninstall()
    provider = provider_for(exporter, batch=batch, service_name=service_name)
    _tracing = _Tracing(provider, provider.get_tracer("caramba"), capture_content)
    return provider


def uninstall() -> None:
    """Stop tracing: send what is pending, shut the provider down."""
    global _tracing
    current, _tracing = _tracing, None
    if current is not None:
        current.provider.force_flush()
        current.provider.shutdown()


def active() -> _Tracing | None:
    """The tracing installed in this process, or None when it is off."""
    return _tracing


def force_flush() -> None:
    if _tracing is not None:
        _tracing.provider.force_flush()


# --- ids: a run's trace, derived span ids --------------------------------------------


def new_traceparent() -> str | None:
    """The W3C traceparent of a new run's span (stored with the run), or None when
    tracing is off."""
    if _tracing is None:
        return None
    trace_id = int.from_bytes(secrets.token_bytes(16), "big") or 1
    span_id = int.from_bytes(secrets.token_bytes(8), "big") or 1
    return f"00-{trace_id:032x}-{span_id:016x}-01"


# --- a turn, and what ends with it ---------------------------------------------------


@dataclass
class TracedTurn:
    tracing: _Tracing
    run_id: str
    agent_id: str
    seq: int
    started: int = field(default_factory=time.time_ns)
    span: Span | None = None
    trace_id: int = 0
    run_span: int = 0
    state: AgentState | None = None
    model: str = ""
    result: str = ""

    def outcome(self, value: Any) -> Any:
        """Note what the turn came to (``TurnOutcome``); returns it."""
        self.result = str(value)
        return value

    def __enter__(self) -> TracedTurn:
        self._token = current.set(self)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        current.reset(self._token)
        span = self.span
        if span is None:
            return
        from opentelemetry.trace import Status, StatusCode

        span.set_attribute("caramba.turn.outcome", self.result or "error")
        if exc is not None:
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
        span.end()
        state = self.state
        if self.result == "ended" and state is not None and state.status.terminal:
            agent_span(self, state)
            if state.spec.parent_id is None:
                run_span(self, state)


class _NoTurn:
    """The turn when tracing is off."""

    def outcome(self, value: Any) -> Any:
        return value

    def __enter__(self) -> _NoTurn:
        return self

    def __exit__(self, *_exc: object) -> None:
        return None


_NO_TURN = _NoTurn()
current: ContextVar[TracedTurn | None] = ContextVar("caramba_turn", default=None)


def turn(run_id: str, agent_id: str, seq: int) -> TracedTurn | _NoTurn:
    """Around one turn: ``with turn(...) as t: return t.outcome(await run(...))``."""
    if _tracing is None:
        return _NO_TURN
    return TracedTurn(_tracing, run_id, agent_id, seq)


def turn_read(traceparent: str | None, state: AgentState | None) -> None:
    """The turn has read its run's head and the agent's state: its span starts (from
    when the turn did), under the agent's span in the run's trace."""
    t = current.get()
    if t is None:
        return
    t.trace_id, t.run_span = run_context(t.run_id, traceparent)
    t.state = state
    name = state.spec.name if state is not None else t.agent_id
    attributes: dict[str, Any] = {
        "gen_ai.conversation.id": t.run_id,
        "gen_ai.agent.id": t.agent_id,
        "gen_ai.agent.name": name,
        "caramba.run.id": t.run_id,
        "caramba.turn.seq": t.seq,
    }
    if state is not None:
        attributes["caramba.agent.role"] = state.spec.role
    t.span = t.tracing.tracer.start_span(
        f"turn {name}",
        context=remote(t.trace_id, agent_span_id(t.trace_id, t.agent_id)),
        start_time=t.started,
        attributes=attributes,
    )


def clock() -> int:
    """Now, for a call's span to start at (0 when tracing is off)."""
    return time.time_ns() if _tracing is not None else 0
