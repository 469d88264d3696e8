"""The spans of a turn's model call and tool calls, under the turn's span."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.telemetry import tracing
from core.telemetry.planning import planning_current
from core.telemetry.tracing import current
from core.types.chat import ToolCall

if TYPE_CHECKING:
    from core.llm.base import LLMRequest, LLMResponse


def model_called(
    request: LLMRequest, response: LLMResponse, started: int, reused: bool = False
) -> None:
    """A span for the turn's model call, from ``started`` (:func:`clock`) to now; outside
    a turn, for a planning call (:func:`core.telemetry.planning.planning`)."""
    t = current.get()
    if t is None or t.span is None:
        _planning_called(request, response, started)
        return
    from opentelemetry import trace

    attributes = _chat_attributes(request, response) | {
        "gen_ai.agent.id": t.agent_id,
        "gen_ai.agent.name": request.agent_name,
        "gen_ai.conversation.id": t.run_id,
        "caramba.reused": reused,
    }
    if request.max_tokens:
        attributes["gen_ai.request.max_tokens"] = request.max_tokens
    if t.tracing.capture and response.content:
        attributes["caramba.response.text"] = response.content
    t.model = response.model
    span = t.tracing.tracer.start_span(
        f"chat {request.model}",
        context=trace.set_span_in_context(t.span),
        kind=trace.SpanKind.CLIENT,
        start_time=started or None,
        attributes=attributes,
    )
    span.end()


def _chat_attributes(request: LLMRequest, response: LLMResponse) -> dict[str, Any]:
    """The GenAI attributes of a model call and its answer."""
    usage = response.usage
    provider = request.model.split("/", 1)[0] if "/" in request.model else "openai"
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.system": provider,
        "gen_ai.request.model": request.model,
        "gen_ai.response.model": response.model,
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
        "gen_ai.usage.cost": usage.cost_usd,
        "gen_ai.response.finish_reasons": ("tool_calls",) if response.tool_calls else ("stop",),
        "caramba.cost_usd": usage.cost_usd,
    }


def _planning_called(request: LLMRequest, response: LLMResponse, started: int) -> None:
    """A planning call's span (the router's, the planner's, the prompt creator's) under
    the planning's span, if planning is traced."""
    p = planning_current.get()
    if p is None:
        return
    from opentelemetry import trace

    attributes = _chat_attributes(request, response)
    attributes |= {
        "gen_ai.agent.name": request.agent_name,
        "gen_ai.conversation.id": p.run_id,
        "caramba.planning.stage": request.agent_name,
    }
    if request.agent_id:
        attributes["gen_ai.agent.id"] = request.agent_id
    if p.capture and response.content:
        attributes["caramba.response.text"] = response.content
    p.spent(response.usage)
    active = tracing.active()
    if active is None:
        return
    chat = active.tracer.start_span(
        f"chat {request.model}",
        context=trace.set_span_in_context(p.span),
        kind=trace.SpanKind.CLIENT,
        start_time=started or None,
        attributes=attributes,
    )
    chat.end()


def model_failed(request: LLMRequest, error: BaseException, started: int) -> None:
    """A span for a model call that failed (after its retries), as an error."""
    t = current.get()
    if t is None or t.span is None:
        return
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    span = t.tracing.tracer.start_span(
        f"chat {request.model}",
        context=trace.set_span_in_context(t.span),
        kind=trace.SpanKind.CLIENT,
        start_time=started or None,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": request.model,
            "gen_ai.agent.id": t.agent_id,
            "gen_ai.conversation.id": t.run_id,
            "error.type": type(error).__name__,
        },
    )
    span.set_status(Status(StatusCode.ERROR, str(error)[:200]))
    span.end()


def tool_called(call: ToolCall, ok: bool, content: str, started: int) -> None:
    """A span for one tool call of the turn, from ``started`` (:func:`clock`) to now."""
    t = current.get()
    if t is None or t.span is None:
        return
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.id,
        "gen_ai.tool.type": "function",
        "gen_ai.conversation.id": t.run_id,
        "caramba.tool.ok": ok,
    }
    if t.tracing.capture:
        attributes["gen_ai.tool.call.arguments"] = call.arguments
        attributes["gen_ai.tool.call.result"] = content
    span = t.tracing.tracer.start_span(
        f"execute_tool {call.name}",
        context=trace.set_span_in_context(t.span),
        start_time=started or None,
        attributes=attributes,
    )
    if not ok:
        span.set_attribute("error.type", "tool_error")
        span.set_status(Status(StatusCode.ERROR, "the tool call failed"))
    span.end()
