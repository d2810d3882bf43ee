"""`flowrun export otel RUN_DIR`: a recorded run as OpenTelemetry GenAI spans (OTLP, protobuf
or JSON). `flowrun export agentspec WORKFLOW`: a workflow as an Oracle Agent Spec file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from flowrun.cli.common import reported


@click.group()
def export() -> None:
    """Export a recorded run or a workflow to other tools."""


@export.command("otel")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the OTLP JSON here (default: stdout).",
)
@click.option("--endpoint", help="Send it to this OTLP/HTTP endpoint (e.g. http://localhost:4318) instead.")
@click.option(
    "--protocol",
    type=click.Choice(["http/protobuf", "http/json"]),
    help="The encoding sent to --endpoint (default: OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf).",
)
def otel(run_dir: Path, output: Path | None, endpoint: str | None, protocol: str | None) -> None:
    """Turn RUN_DIR's events.jsonl into spans following the OpenTelemetry GenAI conventions.
    A file or stdout gets OTLP JSON; an endpoint gets protobuf unless --protocol http/json."""
    from flowrun.runtime.telemetry.export import export_run, protocol_from_env, send, traces_url

    with reported(False):
        document = export_run(run_dir)
        spans = len(document["resourceSpans"][0]["scopeSpans"][0]["spans"])
        if endpoint:
            chosen = protocol_from_env({"OTEL_EXPORTER_OTLP_PROTOCOL": protocol} if protocol else os.environ)
            send(document, endpoint, chosen)
            click.echo(f"sent {spans} span(s) to {traces_url(endpoint)} ({chosen})", err=True)
            return
        text = json.dumps(document, indent=1)
        if output is None:
            click.echo(text)
            return
        output.write_text(text + "\n", encoding="utf-8")
        click.echo(f"wrote {spans} span(s) to {output}", err=True)


@export.command("agentspec")
@click.argument("workflow", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write it here: .json for JSON, else YAML (default: stdout, YAML).",
)
def agentspec(workflow: Path, output: Path | None) -> None:
    """Write WORKFLOW as an Oracle Agent Spec file (26.2.0) that the spec's JSON Schema accepts:
    an Agent (a workflow with an entry agent) or a Flow of AgentNodes (one with steps), with
    llm_configs and ServerTools; what Agent Spec cannot say is kept in `metadata.flowrun`, so
    `flowrun import` of the file gives the same workflow back."""
    import yaml

    from flowrun.manifest.checks.checked import checked_project
    from flowrun.manifest.diagnostics import ManifestInvalid
    from flowrun.manifest.foreign.agentspec.export import export_workflow

    with reported(False):
        project, diagnostics = checked_project(workflow)
        errors = [d for d in diagnostics if d.severity == "error"]
        if errors or not project.workflows:
            raise ManifestInvalid(str(workflow), errors or diagnostics)
        document = export_workflow(project, project.workflows[0].spec)
        if output is not None and output.suffix == ".json":
            text = json.dumps(document, indent=2, ensure_ascii=False)
        else:
            text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
        if output is None:
            click.echo(text)
            return
        output.write_text(text + ("\n" if not text.endswith("\n") else ""), encoding="utf-8")
        click.echo(f"wrote {output} (Agent Spec {document['agentspec_version']})", err=True)
