"""OpenTelemetry traces: one run through the inline scheduler gives the span tree (run →
agents as they created each other → turns → model and tool calls) with the GenAI
attributes; a run's trace continues in another process from its stored traceparent; off,
nothing is traced."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from core import telemetry
from core.config import Settings
from core.config_observe import TelemetrySettings
from core.llm.scripted import Fail, ScriptedModel
from core.process.wiring import build_services
from core.runs.control import start_run
from core.scheduler.recording import RecordingScheduler
from core.telemetry.ids import agent_span_id, parse_traceparent
from core.types.events import AgentCreated
from tests import scenarios
from tests.conftest import REDIS_URL
from tests.helpers import collect


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    telemetry.install(exporter)
    try:
        yield exporter
    finally:
        telemetry.uninstall()


def by_kind(found: list[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [s for s in found if s.name.startswith(prefix)]


async def finished(spans: InMemorySpanExporter, kind: str) -> list[ReadableSpan]:
    """The finished spans once one of ``kind`` is among them (at most 5 s)."""
    for _ in range(500):
        found = list(spans.get_finished_spans())
        if by_kind(found, kind):
            return found
        await asyncio.sleep(0.01)
    return list(spans.get_finished_spans())


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


async def test_a_run_gives_the_span_tree(make_services, settings, spans) -> None:
    model = scenarios.competition()
    model.cost_per_call_usd = 0.002
    svc = make_services(settings, model)
    run_id = await start_run(svc, "Leap-year seconds, best answer wins", scenarios.orchestrator())
    events = await collect(svc, run_id, timeout_s=20)
    run = await svc.store.get_run(run_id)

    parsed = parse_traceparent(run.traceparent)
    assert parsed is not None
    trace_id, run_span_id = parsed
    # The run's end is seen as soon as its last turn's save; that turn's spans end as the
    # turn returns, a moment later.
    found = await finished(spans, "caramba.run")
    assert {s.context.trace_id for s in found} == {trace_id}

    (run_span,) = by_kind(found, "caramba.run")
    assert run_span.context.span_id == run_span_id and run_span.parent is None
    assert run_span.attributes["caramba.run.status"] == "completed"
    assert run_span.attributes["gen_ai.usage.cost"] > 0

    created = {e.name: e for e in events if isinstance(e, AgentCreated)}
    agents = {s.attributes["gen_ai.agent.name"]: s for s in by_kind(found, "invoke_agent")}
    assert set(agents) == set(created)
    for name, event in created.items():
        span = agents[name]
        assert span.context.span_id == agent_span_id(trace_id, event.agent_id or "")
        parent = event.parent_id
        want = agent_span_id(trace_id, parent) if parent else run_span_id
        assert parent_of(span) == want, name
        assert span.attributes["caramba.end_reason"] == "finished"
        assert span.attributes["gen_ai.usage.input_tokens"] > 0

    turns = by_kind(found, "turn ")
    agent_ids = {s.context.span_id for s in agents.values()}
    assert turns and all(parent_of(t) in agent_ids for t in turns)
    turn_ids = {t.context.span_id for t in turns}

    chats = by_kind(found, "chat ")
    assert len(chats) == len(model.requests)
    for chat in chats:
        assert parent_of(chat) in turn_ids
        attrs = chat.attributes
        assert attrs["gen_ai.operation.name"] == "chat"
        assert attrs["gen_ai.request.model"] and attrs["gen_ai.response.model"]
        assert attrs["gen_ai.usage.input_tokens"] > 0
        assert attrs["gen_ai.usage.output_tokens"] == 20
        assert attrs["gen_ai.usage.cost"] == pytest.approx(0.002)

    tools = by_kind(found, "execute_tool ")
    names = {s.attributes["gen_ai.tool.name"] for s in tools}
    assert {"create_agent", "send_message", "finish"} <= names
    assert all(parent_of(s) in turn_ids for s in tools)
    # Content stays off the spans unless capture_content is on.
    assert not any("gen_ai.tool.call.arguments" in s.attributes for s in tools)
    # A run span's agents and turns all start within it.
    assert all(s.start_time >= run_span.start_time for s in agents.values())


async def test_off_traces_nothing(make_services, settings: Settings) -> None:
    assert telemetry.new_traceparent() is None
    exporter = InMemorySpanExporter()
    svc = make_services(settings, scenarios.competition())
    run_id = await start_run(svc, "Leap-year seconds", scenarios.orchestrator())
    await collect(svc, run_id, timeout_s=20)
    assert (await svc.store.get_run(run_id)).traceparent is None
    assert exporter.get_finished_spans() == ()


def test_setup_does_nothing_when_disabled(settings: Settings) -> None:
    telemetry.setup(settings.telemetry)
    assert telemetry.new_traceparent() is None
    assert telemetry.clock() == 0


_CHILD = r"""
import asyncio, json, sys
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from core import telemetry
from core.config import load_settings
from core.llm.scripted import ScriptedModel
from core.process.jobs import handle
from core.process.wiring import build_services
from core.scheduler.base import TurnJob
from core.scheduler.recording import RecordingScheduler

async def main() -> None:
    exporter = InMemorySpanExporter()
    telemetry.install(exporter)
    settings = load_settings(redis={"url": sys.argv[1], "key_prefix": sys.argv[2]})
    svc = build_services(settings, RecordingScheduler(), llm=ScriptedModel())
    await handle(svc, TurnJob.model_validate_json(sys.argv[3]))
    for s in exporter.get_finished_spans():
        print(json.dumps({"name": s.name, "trace": s.context.trace_id,
                          "span": s.context.span_id,
                          "parent": s.parent.span_id if s.parent else None}))
    await svc.redis.aclose()

asyncio.run(main())
"""


@pytest.mark.integration
async def test_the_trace_continues_in_another_process(settings, real_redis, spans) -> None:
    """The run is recorded here; its first turn runs in a new Python process, which
    continues the run's trace from the traceparent stored with the run."""
    prefix = real_redis.test_prefix
    keyed = settings.model_copy(
        update={"redis": settings.redis.model_copy(update={"url": REDIS_URL, "key_prefix": prefix})}
    )
    recording = RecordingScheduler()
    svc = build_services(keyed, recording, redis=real_redis, llm=scenarios.competition())
    root = scenarios.orchestrator()
    run_id = await start_run(svc, "Finish at once", root)
    (job,) = recording.jobs
    parsed = parse_traceparent((await svc.store.get_run(run_id)).traceparent)
    assert parsed is not None
    trace_id, run_span_id = parsed

    env = {**os.environ, "CARAMBA_REDIS__URL": REDIS_URL}
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _CHILD,
        REDIS_URL,
        prefix,
        job.model_dump_json(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=os.getcwd(),
    )
    out, err = await asyncio.wait_for(child.communicate(), 60)
    assert child.returncode == 0, err.decode()[-2000:]
    found: list[dict[str, Any]] = [json.loads(line) for line in out.decode().splitlines()]
    names = {s["name"]: s for s in found}
    assert {s["trace"] for s in found} == {trace_id}
    agent = agent_span_id(trace_id, root.id)
    assert names["caramba.run"]["span"] == run_span_id
    assert names[f"invoke_agent {root.name}"]["span"] == agent
    assert names[f"invoke_agent {root.name}"]["parent"] == run_span_id
    assert names[f"turn {root.name}"]["parent"] == agent
    assert names["execute_tool finish"]["parent"] == names[f"turn {root.name}"]["span"]
    # This process traced nothing of that turn.
    assert not [s for s in spans.get_finished_spans() if s.name.startswith("turn")]


async def test_spans_reach_an_otlp_http_receiver(make_services, settings) -> None:
    """With [telemetry] on, spans go over OTLP/HTTP (protobuf) to the configured endpoint."""
    received: list[bytes] = []

    async def traces(request: web.Request) -> web.Response:
        received.append(await request.read())
        return web.Response(status=200)

    app = web.Application()
    app.router.add_post("/v1/traces", traces)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    on = TelemetrySettings(enabled=True, otlp_endpoint=f"http://127.0.0.1:{port}/v1/traces")
    try:
        svc = make_services(settings.model_copy(update={"telemetry": on}), scenarios.competition())
        run_id = await start_run(svc, "Leap-year seconds", scenarios.orchestrator())
        await collect(svc, run_id, timeout_s=20)
        await asyncio.to_thread(telemetry.force_flush)
    finally:
        await asyncio.to_thread(telemetry.uninstall)
        await runner.cleanup()
    names = set()
    for body in received:
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource.resource.attributes}
            assert service["service.name"] == "caramba"
            names |= {s.name for scope in resource.scope_spans for s in scope.spans}
    assert "caramba.run" in names and "invoke_agent Orchestrator" in names
    assert any(n.startswith("chat ") for n in names)


async def test_a_failed_model_call_is_an_error_span(make_services, settings, spans) -> None:
    model = ScriptedModel().script("Orchestrator", Fail("the provider is down", status=503))
    svc = make_services(settings, model)
    run_id = await start_run(svc, "Fail at once", scenarios.orchestrator())
    await collect(svc, run_id, timeout_s=20)
    found = list(spans.get_finished_spans())
    (chat,) = by_kind(found, "chat ")
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.attributes["error.type"] == "LLMError"
    (agent,) = by_kind(found, "invoke_agent ")
    assert agent.attributes["caramba.end_reason"] == "llm_error"
    assert agent.status.status_code is StatusCode.ERROR
    (run,) = by_kind(found, "caramba.run")
    assert run.attributes["caramba.run.status"] == "failed"
