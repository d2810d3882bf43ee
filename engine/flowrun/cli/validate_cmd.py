"""`flowrun validate`: every problem of the manifests under the given paths, in one pass."""

from __future__ import annotations

import sys
from pathlib import Path

import click


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
def validate(paths: tuple[Path, ...], fmt: str, strict: bool) -> None:
    """Check manifests: YAML, schema, and cross-references (files or folders; default: .)."""
    from flowrun.manifest.diagnostics import render
    from flowrun.manifest.validate import validate_paths

    diagnostics, checked = validate_paths(list(paths) or [Path(".")])
    output = render(diagnostics, fmt, checked)
    if output:
        click.echo(output)
    failing = [d for d in diagnostics if d.severity == "error" or strict]
    sys.exit(1 if failing else 0)
