"""The OpenTelemetry SDK's side: a provider whose id generator can be told the ids of a
span (an agent's or a run's, derived so that every process agrees on them). Imported only
when tracing is turned on."""

from __future__ import annotations

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator

from core.telemetry.ids import forced_span, forced_trace


class DerivedIds(IdGenerator):
    """Random ids, except where the caller set the next span's ids."""

    def __init__(self) -> None:
        self._random = RandomIdGenerator()

    def generate_span_id(self) -> int:
        return forced_span.get() or self._random.generate_span_id()

    def generate_trace_id(self) -> int:
        return forced_trace.get() or self._random.generate_trace_id()


def provider_for(exporter: SpanExporter, *, batch: bool, service_name: str) -> TracerProvider:
    provider = TracerProvider(
        resource=Resource.create({"service.name": service_name}), id_generator=DerivedIds()
    )
    processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    return provider
