"""Live OpenTelemetry export during a run: when OTEL_EXPORTER_OTLP_ENDPOINT (or
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set and the `otel` extra is installed
(`pip install 'flowrun[otel]'`), the run's events become real spans (opentelemetry-sdk, OTLP/HTTP
exporter, configured by the usual OTEL_* variables) as they happen, parented the same way as
`flowrun export otel` writes them. Without the extra nothing is exported and nothing fails."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from flowrun._version import __version__
from flowrun.events import Event
from flowrun.runtime.run import Run
from flowrun.runtime.telemetry.spans import ModelInfo, SpanBuilder, SpanData, provider_name

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def wanted() -> bool:
    """An endpoint is configured and the SDK and its OTLP/HTTP exporter are installed."""
    if not any(os.environ.get(name) for name in ENDPOINT_VARIABLES):
        return False
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")
    )


class SdkSink:
    """Each span as an SDK span, started and ended with the event's own times."""

    def __init__(self, tracer: Any) -> None:
        self.tracer = tracer
        self.spans: dict[str, Any] = {}

    def started(self, span: SpanData) -> None:
        from opentelemetry import trace

        parent = self.spans.get(span.parent) if span.parent else None
        context = trace.set_span_in_context(parent) if parent is not None else None
        kind = trace.SpanKind.CLIENT if span.kind == "client" else trace.SpanKind.INTERNAL
        self.spans[span.key] = self.tracer.start_span(
            span.name, context=context, kind=kind, attributes=dict(span.attributes), start_time=span.start_ns
        )

    def ended(self, span: SpanData) -> None:
        from opentelemetry.trace import Status, StatusCode

        sdk_span = self.spans.pop(span.key, None)
        if sdk_span is None:
            return
        sdk_span.set_attributes(dict(span.attributes))
        sdk_span.set_status(Status(StatusCode.ERROR, span.message) if span.error else Status(StatusCode.OK))
        sdk_span.end(end_time=span.end_ns)


class LiveExport:
    def __init__(self, run: Run) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        resource = Resource.create({"service.name": "flowrun", "flowrun.run_id": run.run_id})
        self.provider = TracerProvider(resource=resource)
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        tracer = self.provider.get_tracer("flowrun", __version__)
        self.builder = SpanBuilder(SdkSink(tracer), run_models(run))

    def on_event(self, event: Event) -> None:
        self.builder.feed(event)

    def close(self) -> None:
        self.builder.finish("incomplete")
        self.provider.shutdown()  # flushes what is still queued


def run_models(run: Run) -> ModelInfo:
    choice = run.models.choice

    def info(name: str, agent: str) -> tuple[str, str]:
        try:
            config = choice.config(name, agent)
        except Exception:  # a name the run no longer resolves: reported as it is
            return "unknown", name
        return provider_name(config.provider, config.base_url), config.model

    return info


def live_export(run: Run) -> LiveExport | None:
    return LiveExport(run) if wanted() else None
