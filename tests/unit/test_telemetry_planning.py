"""OpenTelemetry traces of a request's planning: the router's, the planner's and the
prompt creator's model calls are chat spans under one ``caramba.planning`` span, a child
of the run's span in the run's trace (the one its agents' spans join once it runs), with
the GenAI attributes; a planning that fails is an error span."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from core import telemetry
from core.llm.scripted import Fail, ScriptedModel
from core.process.demo_flow import team_model
from core.runs.requests import request_run
from core.telemetry.ids import parse_traceparent
from core.types.run import RunStatus

STAGES = {"router", "planner", "prompt_creator"}


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    telemetry.install(exporter)
    try:
        yield exporter
    finally:
        telemetry.uninstall()


async def _settled(svc, run_id: str) -> RunStatus:
    for _ in range(400):
        status = (await svc.store.get_run(run_id)).status
        if status is not RunStatus.PLANNING:
            return status
        await asyncio.sleep(0.02)
    raise AssertionError("planning never ended")


def _named(found: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [s for s in found if s.name.startswith(prefix)]


async def test_planning_calls_are_chat_spans_under_the_run(make_services, settings, spans) -> None:
    model = team_model()
    model.cost_per_call_usd = 0.001
    svc = make_services(settings, model)
    run_id = await request_run(svc, "Budget our offsite", requested_by="U-ann")
    assert await _settled(svc, run_id) is RunStatus.PROPOSED
    run = await svc.store.get_run(run_id)
    parsed = parse_traceparent(run.traceparent)
    assert parsed is not None
    trace_id, run_span_id = parsed

    found = spans.get_finished_spans()
    (planning,) = _named(found, "caramba.planning")
    assert planning.context.trace_id == trace_id
    assert planning.parent is not None and planning.parent.span_id == run_span_id
    assert planning.attributes["caramba.run.id"] == run_id
    assert planning.status.status_code is not StatusCode.ERROR

    chats = _named(found, "chat ")
    asked = Counter(r.agent_name for r in model.requests)
    assert set(asked) == STAGES
    assert Counter(s.attributes["gen_ai.agent.name"] for s in chats) == asked
    for chat in chats:
        assert chat.context.trace_id == trace_id
        assert chat.parent is not None and chat.parent.span_id == planning.context.span_id
        attrs = chat.attributes
        assert attrs["gen_ai.operation.name"] == "chat"
        assert attrs["caramba.planning.stage"] == attrs["gen_ai.agent.name"]
        assert attrs["gen_ai.request.model"] and attrs["gen_ai.response.model"]
        assert attrs["gen_ai.usage.input_tokens"] > 0
        assert attrs["gen_ai.usage.output_tokens"] == 20
        assert attrs["gen_ai.usage.cost"] == pytest.approx(0.001)
        assert attrs["gen_ai.conversation.id"] == run_id
        assert chat.start_time >= planning.start_time and chat.end_time <= planning.end_time
    # The planning span sums its calls; the run records the same.
    assert planning.attributes["caramba.planning.calls"] == len(chats)
    assert planning.attributes["gen_ai.usage.cost"] == pytest.approx(0.001 * len(chats))
    assert run.planning is not None
    assert planning.attributes["gen_ai.usage.input_tokens"] == run.planning.prompt_tokens
    # Content stays off the spans unless capture_content is on.
    assert not any("caramba.response.text" in s.attributes for s in chats)


async def test_a_failed_planning_is_an_error_span(make_services, settings, spans) -> None:
    model = ScriptedModel().script("router", Fail("the provider is down"))
    svc = make_services(settings, model)
    run_id = await request_run(svc, "Budget our offsite", requested_by="U-ann")
    assert await _settled(svc, run_id) is RunStatus.FAILED
    (planning,) = _named(spans.get_finished_spans(), "caramba.planning")
    assert planning.status.status_code is StatusCode.ERROR
    assert planning.attributes["caramba.planning.calls"] == 0


async def test_off_planning_traces_nothing(make_services, settings) -> None:
    svc = make_services(settings, team_model())
    run_id = await request_run(svc, "Budget our offsite", requested_by="U-ann")
    assert await _settled(svc, run_id) is RunStatus.PROPOSED
    assert (await svc.store.get_run(run_id)).traceparent is None
