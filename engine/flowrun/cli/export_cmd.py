"""`flowrun export otel RUN_DIR`: a recorded run as OpenTelemetry GenAI spans (OTLP, protobuf
or JSON)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from flowrun.cli.common import reported


@click.group()
def export() -> None:
    """Export a recorded run to other tools."""


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
