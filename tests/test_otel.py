"""OpenTelemetry: a recorded sub-agent run (real anthropic/openai SDKs against the scripted
server) exported with `flowrun export otel` (span names, parent links, GenAI attributes), sent
to an OTLP/HTTP endpoint, and live spans received on a local OTLP/HTTP endpoint during a run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from otlp_receiver import Receiver
from support.cli import run_cli
from support.env import model_env
from support.project import write_files
from support.wire_server import Reply, Script, ToolCallSpec, WireServer

LEAD = "You are the lead"
HELPER = "You are the helper"
WORKFLOW = """version: 1
kind: workflow
name: traced
inputs: {question: {}}
models:
  claude: {provider: anthropic, model: claude-test, api_key_env: ANTHROPIC_API_KEY}
default_model: claude
entry: lead
"""
AGENTS = {
    "lead": f"version: 1\nkind: agent\nname: lead\nprompt: {LEAD}.\ntools: [helper, read_file]\n",
    "helper": f"version: 1\nkind: agent\nname: helper\nprompt: {HELPER}.\ntools: [write_file]\n",
}


def script() -> Script:
    lead = [
        Reply(
            tool_calls=[ToolCallSpec("helper", {"task": "write notes.md"})], usage=(100, 20), cache=(30, 5)
        ),
        Reply(tool_calls=[ToolCallSpec("read_file", {"path": "missing.md"})], usage=(120, 10)),
        Reply(text="Done.", usage=(130, 5)),
    ]
    helper = [
        Reply(tool_calls=[ToolCallSpec("write_file", {"path": "notes.md", "content": "n\n"})], usage=(50, 7)),
        Reply(text="Wrote notes.md.", usage=(60, 3)),
    ]
    return Script({LEAD: lead, HELPER: helper})


def project(tmp_path: Path) -> Path:
    agents = {f"agents.d/{name}.yaml": text for name, text in AGENTS.items()}
    return write_files(tmp_path, {"traced.yaml": WORKFLOW, **agents}) / "traced.yaml"


def record(tmp_path: Path, server: WireServer, extra: dict[str, str] | None = None) -> Path:
    env = model_env(server, "anthropic", **(extra or {}))
    args = [str(project(tmp_path)), "--question", "q", "--runs-dir", str(tmp_path / "runs"), "--run-id", "r"]
    proc = run_cli(args, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tmp_path / "runs" / "r"


def attrs(span: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for item in span["attributes"]:
        value = item["value"]
        if "arrayValue" in value:
            out[item["key"]] = [next(iter(v.values())) for v in value["arrayValue"]["values"]]
        else:
            out[item["key"]] = next(iter(value.values()))
    return out


def check_tree(spans: list[dict[str, Any]]) -> None:
    """The shape every export of the recorded run has (spans as OTLP JSON dicts)."""
    by_id = {s["spanId"]: s for s in spans}
    assert len({s["traceId"] for s in spans}) == 1

    def parent(span: dict[str, Any]) -> str | None:
        found = by_id.get(span.get("parentSpanId", ""))
        return found["name"] if found else None

    names = [s["name"] for s in spans]
    assert names.count("invoke_workflow traced") == 1
    assert names.count("invoke_agent lead") == 1 and names.count("invoke_agent helper") == 1
    assert names.count("chat claude-test") == 5
    (root,) = [s for s in spans if s["name"] == "invoke_workflow traced"]
    assert parent(root) is None
    assert attrs(root) == {"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": "traced"}
    spans_named = {s["name"]: s for s in spans}
    lead = spans_named["invoke_agent lead"]
    assert parent(lead) == "invoke_workflow traced"
    call = spans_named["execute_tool helper"]
    assert parent(call) == "invoke_agent lead"
    helper = spans_named["invoke_agent helper"]
    assert parent(helper) == "execute_tool helper"  # the sub-agent hangs under the call that started it
    write = spans_named["execute_tool write_file"]
    assert parent(write) == "invoke_agent helper"
    lead_attrs = attrs(lead)
    assert lead_attrs["gen_ai.provider.name"] == "anthropic"
    assert lead_attrs["gen_ai.agent.name"] == "lead" and lead_attrs["gen_ai.agent.id"] == "lead"
    assert int(lead_attrs["gen_ai.usage.output_tokens"]) == 35
    chats = [s for s in spans if s["name"] == "chat claude-test" and parent(s) == "invoke_agent lead"]
    first = min(chats, key=lambda s: int(s["startTimeUnixNano"]))
    first_attrs = attrs(first)
    assert first["kind"] == 3  # CLIENT
    assert first_attrs["gen_ai.operation.name"] == "chat"
    assert first_attrs["gen_ai.provider.name"] == "anthropic"
    assert first_attrs["gen_ai.request.model"] == "claude-test"
    assert int(first_attrs["gen_ai.usage.input_tokens"]) == 135  # 100 + 30 cache read + 5 cache write
    assert int(first_attrs["gen_ai.usage.cache_read.input_tokens"]) == 30
    assert int(first_attrs["gen_ai.usage.output_tokens"]) == 20
    assert first_attrs["gen_ai.response.finish_reasons"] == ["tool_use"]
    call_attrs = attrs(call)
    assert call_attrs["gen_ai.operation.name"] == "execute_tool"
    assert call_attrs["gen_ai.tool.name"] == "helper" and call_attrs["gen_ai.tool.call.id"]
    failed = spans_named["execute_tool read_file"]
    assert failed["status"]["code"] == 2 and attrs(failed)["error.type"] == "NOT_FOUND"
    for span in spans:
        assert "gen_ai.system" not in attrs(span)  # the deprecated attribute is never used
        assert int(span["startTimeUnixNano"]) <= int(span["endTimeUnixNano"])


def test_export_a_recorded_sub_agent_run(tmp_path: Path) -> None:
    with WireServer(script()) as server:
        run_dir = record(tmp_path, server)
    proc = run_cli(["export", "otel", str(run_dir), "-o", str(tmp_path / "trace.json")], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "wrote 11 span(s)" in proc.stderr
    document = json.loads((tmp_path / "trace.json").read_text())
    resource = document["resourceSpans"][0]
    assert {"key": "service.name", "value": {"stringValue": "flowrun"}} in resource["resource"]["attributes"]
    check_tree(resource["scopeSpans"][0]["spans"])
    again = run_cli(["export", "otel", str(run_dir)], cwd=tmp_path)  # stdout, and the same ids again
    assert json.loads(again.stdout) == document


def export_to(
    receiver: Receiver, run_dir: Path, *flags: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    try:
        return run_cli(
            ["export", "otel", str(run_dir), "--endpoint", receiver.url, *flags], cwd=run_dir, env=env
        )
    finally:
        receiver.stop()


def test_export_to_an_endpoint_in_protobuf_and_json(tmp_path: Path) -> None:
    with WireServer(script()) as server:
        run_dir = record(tmp_path, server)
    written = run_cli(["export", "otel", str(run_dir)], cwd=tmp_path)
    document = json.loads(written.stdout)
    # by default protobuf, the protocol's default and the one every receiver takes
    receiver = Receiver(protobuf_only=True)
    proc = export_to(receiver, run_dir)
    assert proc.returncode == 0, proc.stderr
    assert "(http/protobuf)" in proc.stderr
    (request,) = receiver.received
    assert request.path == "/v1/traces" and request.content_type == "application/x-protobuf"
    spans = protobuf_spans([request.body])
    for span in spans:
        span["status"] = {"code": span["status"]["code"]}
    check_tree(spans)
    # the same spans as the JSON export: ids, names, parents
    json_spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert [(s["traceId"], s["spanId"], s.get("parentSpanId"), s["name"]) for s in spans] == [
        (s["traceId"], s["spanId"], s.get("parentSpanId"), s["name"]) for s in json_spans
    ]
    # JSON when asked, by flag or by the OTel variable
    for flags, env in (
        (["--protocol", "http/json"], None),
        ([], {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}),
    ):
        receiver = Receiver()
        proc = export_to(receiver, run_dir, *flags, env=env)
        assert proc.returncode == 0, proc.stderr
        (request,) = receiver.received
        assert request.content_type == "application/json"
        assert json.loads(request.body) == document
    # a receiver that takes only protobuf refuses JSON: one line that says what to pass
    proc = export_to(Receiver(protobuf_only=True), run_dir, "--protocol", "http/json")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "refused OTLP JSON (HTTP 415)" in proc.stderr and "--protocol http/protobuf" in proc.stderr


def test_export_errors_are_one_line(tmp_path: Path) -> None:
    proc = run_cli(["export", "otel", str(tmp_path)], cwd=tmp_path)
    assert proc.returncode == 1 and "is not a run folder" in proc.stderr and "Traceback" not in proc.stderr
    (tmp_path / "events.jsonl").write_text("")
    proc = run_cli(["export", "otel", str(tmp_path), "--endpoint", "http://127.0.0.1:9"], cwd=tmp_path)
    assert proc.returncode == 1 and "cannot send the trace" in proc.stderr


def protobuf_spans(bodies: list[bytes]) -> list[dict[str, Any]]:
    """OTLP/HTTP protobuf requests as the JSON-shaped dicts check_tree reads."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    spans = []
    for body in bodies:
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    as_dict = MessageToDict(span)
                    as_dict["traceId"] = span.trace_id.hex()
                    as_dict["spanId"] = span.span_id.hex()
                    if span.parent_span_id:
                        as_dict["parentSpanId"] = span.parent_span_id.hex()
                    as_dict["kind"] = int(span.kind)
                    as_dict["status"] = {"code": int(span.status.code)}
                    as_dict.setdefault("attributes", [])
                    spans.append(as_dict)
    return spans


@pytest.mark.parametrize("variable", ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
def test_live_spans_reach_a_local_endpoint(tmp_path: Path, variable: str) -> None:
    receiver = Receiver()
    try:
        endpoint = receiver.url if variable == "OTEL_EXPORTER_OTLP_ENDPOINT" else receiver.url + "/v1/traces"
        with WireServer(script()) as server:
            record(tmp_path, server, {variable: endpoint})
    finally:
        receiver.stop()
    assert receiver.received, "no spans arrived"
    assert {r.path for r in receiver.received} == {"/v1/traces"}
    assert {r.content_type for r in receiver.received} == {"application/x-protobuf"}
    spans = protobuf_spans([r.body for r in receiver.received])
    for span in spans:  # MessageToDict's attribute values: {"stringValue": ...} as in OTLP JSON
        span["status"] = {"code": span["status"]["code"]}
    check_tree(spans)
