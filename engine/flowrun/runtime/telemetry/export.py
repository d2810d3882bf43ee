"""`flowrun export otel`: a recorded run as an OTLP ExportTraceServiceRequest, written to a
file or sent to an OTLP/HTTP endpoint, in either encoding OTLP/HTTP defines: protobuf (the
protocol's default, and the only one some receivers take: Phoenix answers JSON with 415) or
JSON. The spans come from `spans.SpanBuilder`; ids are derived from the run id and the span's
place, so exporting the same run twice gives the same trace."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from flowrun._version import __version__
from flowrun.errors import RunError
from flowrun.records import RunRecord, run_record
from flowrun.runtime.durable.event_log import read_events, read_lines
from flowrun.runtime.telemetry.spans import ModelInfo, SpanBuilder, SpanData, provider_name

if TYPE_CHECKING:
    from flowrun.runtime.models.calls import ModelChoice

KINDS = {"internal": 1, "client": 3}  # SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT
STATUS_OK, STATUS_ERROR = 1, 2
Protocol = Literal["http/protobuf", "http/json"]  # OTEL_EXPORTER_OTLP_PROTOCOL's values for HTTP
PROTOCOLS: tuple[Protocol, ...] = ("http/protobuf", "http/json")
CONTENT_TYPES: dict[Protocol, str] = {
    "http/protobuf": "application/x-protobuf",
    "http/json": "application/json",
}
ID_KEYS = ("traceId", "spanId", "parentSpanId")


class Collector:
    """A sink that keeps finished spans, in the order they ended."""

    def __init__(self) -> None:
        self.spans: list[SpanData] = []

    def started(self, span: SpanData) -> None:
        return None

    def ended(self, span: SpanData) -> None:
        self.spans.append(span)


def run_spans(run_dir: Path) -> tuple[str, list[SpanData]]:
    """(run id, spans) of a recorded run."""
    log = run_dir / "events.jsonl"
    if not log.is_file():
        raise RunError(f"{run_dir} is not a run folder (no events.jsonl)", "pass a folder under runs/")
    collector = Collector()
    builder = SpanBuilder(collector, recorded_models(run_dir))
    for event in read_events(log):
        builder.feed(event)
    builder.finish("incomplete")
    return run_dir.resolve().name, collector.spans


def recorded_models(run_dir: Path) -> ModelInfo:
    """How a recorded run's model names map to (provider, model id): from its workflow, loaded
    again with the run's --dry-run and --model; a name that no longer resolves is read as
    `provider:model` shorthand or left as it is."""
    start = next((e for e in read_lines(run_dir / "events.jsonl") if e.get("type") == "run_start"), {})
    choice = _choice(run_record(start))
    cache: dict[str, tuple[str, str]] = {}

    def info(name: str, agent: str) -> tuple[str, str]:
        if name not in cache:
            cache[name] = _resolve(choice, name, agent)
        return cache[name]

    return info


def _choice(start: RunRecord) -> ModelChoice | None:
    from flowrun.errors import FlowrunError
    from flowrun.manifest.project import load_project
    from flowrun.runtime.models.calls import ModelChoice
    from flowrun.runtime.options import RunOptions

    path = Path(str(start.get("workflow_file") or ""))
    if not path.is_file():
        return None
    try:
        project = load_project(path.parent, [path])
    except (OSError, FlowrunError):
        return None
    if not project.workflows:
        return None
    spec = project.workflows[0].spec
    try:
        options = RunOptions.from_record(start)
    except FlowrunError:
        options = RunOptions()
    return ModelChoice(
        project,
        dict(spec.models),
        spec.default_model,
        path.parent,
        dry_run=options.dry_run,
        override=options.model,
        per_agent=dict(options.agent_models),
    )


def _resolve(choice: ModelChoice | None, name: str, agent: str) -> tuple[str, str]:
    from flowrun.errors import FlowrunError

    if choice is not None:
        try:
            config = choice.config(name, agent)
            return provider_name(config.provider, config.base_url), config.model
        except (FlowrunError, KeyError, ValueError):
            pass
    provider, _, model = name.partition(":")
    return (provider_name(provider, None), model) if model else ("unknown", name)


def otlp_document(run_id: str, spans: list[SpanData]) -> dict[str, object]:
    trace_id = hashlib.sha256(f"flowrun:{run_id}".encode()).hexdigest()[:32]
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [
                        _attr("service.name", "flowrun"),
                        _attr("service.version", __version__),
                        _attr("flowrun.run_id", run_id),
                    ]
                },
                "scopeSpans": [
                    {
                        "scope": {"name": "flowrun", "version": __version__},
                        "spans": [_span(trace_id, run_id, span) for span in spans],
                    }
                ],
            }
        ]
    }


def span_id(run_id: str, key: str) -> str:
    return hashlib.sha256(f"{run_id}/{key}".encode()).hexdigest()[:16]


def _span(trace_id: str, run_id: str, span: SpanData) -> dict[str, object]:
    out: dict[str, object] = {
        "traceId": trace_id,
        "spanId": span_id(run_id, span.key),
        "name": span.name,
        "kind": KINDS[span.kind],
        "startTimeUnixNano": str(span.start_ns),
        "endTimeUnixNano": str(span.end_ns if span.end_ns is not None else span.start_ns),
        "attributes": [_attr(k, v) for k, v in span.attributes.items()],
        "status": {"code": STATUS_ERROR, "message": span.message} if span.error else {"code": STATUS_OK},
    }
    if span.parent is not None:
        out["parentSpanId"] = span_id(run_id, span.parent)
    return out


def _attr(key: str, value: object) -> dict[str, object]:
    return {"key": key, "value": _value(value)}


def _value(value: object) -> dict[str, object]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    return {"stringValue": str(value)}


def export_run(run_dir: Path) -> dict[str, Any]:
    run_id, spans = run_spans(run_dir)
    return otlp_document(run_id, spans)


def traces_url(endpoint: str) -> str:
    """An OTLP/HTTP base endpoint gets `/v1/traces`; a URL that already names a path is kept."""
    from urllib.parse import urlparse

    path = urlparse(endpoint).path
    return endpoint if path not in ("", "/") else endpoint.rstrip("/") + "/v1/traces"


def protocol_from_env(environ: Mapping[str, str]) -> Protocol:
    """The encoding the OTel variables ask for (the traces' own first), else protobuf."""
    for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        value = environ.get(name, "").strip()
        for protocol in PROTOCOLS:
            if value == protocol:
                return protocol
    return "http/protobuf"


def encode(document: Mapping[str, object], protocol: Protocol) -> bytes:
    """The document's bytes on the wire: OTLP JSON as it is, or the protobuf message (the JSON
    form read into it, its hex ids turned into the bytes protobuf's JSON mapping expects)."""
    if protocol == "http/json":
        return json.dumps(document).encode()
    try:
        from google.protobuf.json_format import ParseDict
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError:
        raise RunError(
            "OTLP protobuf needs the otel extra (opentelemetry-proto)",
            "pip install 'flowrun[otel]', or pass --protocol http/json",
        ) from None
    message = ParseDict(cast("dict[str, Any]", _ids_in_base64(document)), ExportTraceServiceRequest())
    return bytes(message.SerializeToString())


def _ids_in_base64(document: Mapping[str, object]) -> dict[str, object]:
    """OTLP JSON writes trace and span ids in hex; protobuf's JSON mapping reads bytes as base64."""
    return {
        k: base64.b64encode(bytes.fromhex(str(v))).decode() if k in ID_KEYS else _converted(v)
        for k, v in document.items()
    }


def _converted(value: object) -> object:
    if isinstance(value, Mapping):
        return _ids_in_base64(value)
    if isinstance(value, list):
        return [_converted(v) for v in value]
    return value


def send(
    document: Mapping[str, object],
    endpoint: str,
    protocol: Protocol = "http/protobuf",
    timeout_s: float = 30.0,
) -> None:
    """POST the document to an OTLP/HTTP receiver; RunError with the status when it is refused."""
    import httpx

    url = traces_url(endpoint)
    body = encode(document, protocol)
    try:
        response = httpx.post(
            url, content=body, headers={"Content-Type": CONTENT_TYPES[protocol]}, timeout=timeout_s
        )
    except httpx.HTTPError as e:
        raise RunError(
            f"cannot send the trace to {url}: {e}", "check --endpoint (an OTLP/HTTP receiver)"
        ) from None
    if response.status_code == 415 and protocol == "http/json":
        raise RunError(f"{url} refused OTLP JSON (HTTP 415)", "send protobuf: --protocol http/protobuf")
    if response.status_code >= 300:
        raise RunError(
            f"{url} refused the trace: HTTP {response.status_code} {response.text[:200]}", "check --endpoint"
        )
