"""`flowrun validate`: every problem of the manifests under the given paths, in one pass."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from flowrun.manifest.diagnostics import Diagnostic


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "github"]),
    default="text",
    show_default=True,
    help="github: ::error annotations for CI.",
)
@click.option("--strict", is_flag=True, help="Warnings fail too.")
@click.option(
    "--explain",
    is_flag=True,
    help="Also list, per workflow and agent, the sandbox its tools run in and the calls that need approval.",
)
@click.option(
    "--connect",
    is_flag=True,
    help="Also start each MCP server (stdio ones in the sandbox) and check the tools named exist.",
)
def validate(paths: tuple[Path, ...], fmt: str, strict: bool, explain: bool, connect: bool) -> None:
    """Check manifests: YAML, schema, and cross-references (files or folders; default: .)."""
    from flowrun.manifest.diagnostics import render
    from flowrun.manifest.validate import validate_paths

    if explain and fmt != "text":
        raise click.UsageError("--explain goes with --format text")
    diagnostics, checked = validate_paths(list(paths) or [Path(".")])
    if connect:
        diagnostics = sorted(
            diagnostics + connected(list(paths) or [Path(".")]), key=lambda d: (d.file, d.line, d.column)
        )
    output = render(diagnostics, fmt, checked)
    if output:
        click.echo(output)
    failing = [d for d in diagnostics if d.severity == "error" or strict]
    if explain and not any(d.severity == "error" for d in diagnostics):
        click.echo("\n".join(explanation(list(paths) or [Path(".")])))
    sys.exit(1 if failing else 0)


def explanation(paths: list[Path]) -> list[str]:
    """Each workflow's agents with their effective sandbox and approvals."""
    from flowrun.manifest.project import load_project
    from flowrun.manifest.sandboxing import explain
    from flowrun.manifest.validate import find_roots

    lines: list[str] = []
    for root, files in find_roots(paths).items():
        project = load_project(root, files)
        for loaded in project.workflows:
            lines.append(f"\nworkflow {loaded.spec.name} ({loaded.source.display}):")
            base = loaded.source.path.parent.resolve()
            lines += ["  " + line for line in explain(project, loaded.spec, base)]
    return lines


def connected(paths: list[Path]) -> list[Diagnostic]:
    """`--connect`: the MCP servers of every project under `paths`, started and asked."""
    import asyncio

    from flowrun.manifest.project import load_project
    from flowrun.manifest.validate import find_roots
    from flowrun.runtime.mcp_check import check_servers

    out: list[Diagnostic] = []
    for root, files in find_roots(paths).items():
        out += asyncio.run(check_servers(load_project(root, files)))
    return out
