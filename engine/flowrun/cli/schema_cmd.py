"""`flowrun schema`: the JSON Schema of each manifest kind (generated from manifest/specs.py)."""

from __future__ import annotations

from pathlib import Path

import click

from flowrun.manifest.schema.export import KIND_NAMES


@click.command()
@click.argument("kind", required=False, type=click.Choice(KIND_NAMES))
@click.option(
    "--write", "write_dir", type=click.Path(file_okay=False, path_type=Path), help="Write all schemas here."
)
def schema(kind: str | None, write_dir: Path | None) -> None:
    """Print the JSON Schema of a manifest KIND (default: workflow)."""
    from flowrun.manifest.schema.export import schema_text, write_all

    if write_dir is not None:
        for path in write_all(write_dir):
            click.echo(path)
        return
    click.echo(schema_text(kind or "workflow"), nl=False)
