"""`flowrun import`: another framework's project (CrewAI, ADK Agent Config, docker-agent,
pydantic-ai, Microsoft Agent Framework) written as a flowrun project, with IMPORTED.md saying
what each source key became. Exit 0 when the written project validates, 1 with the reasons
when nothing runnable can be made (nothing is written then), 2 for a usage error."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from flowrun.cli.common import fail, reported
from flowrun.manifest.foreign.registry import FORMATS


@click.command("import")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option(
    "-o",
    "--output",
    "output",
    type=click.Path(path_type=Path),
    default=None,
    help="The folder to write (new or empty; default: ./NAME, the workflow's name).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(list(FORMATS)),
    default=None,
    help="The source's format (default: found from its files).",
)
def import_(source: Path, output: Path | None, fmt: str | None) -> None:
    """Write a flowrun project from another framework's files (CrewAI, ADK, docker-agent, ...).

    SOURCE is a file or a folder: a CrewAI crew (`config/*.yaml` with crew.py, or crew.jsonc),
    an ADK agent folder (root_agent.yaml), a docker-agent YAML file, a pydantic-ai agent spec or
    a Microsoft Agent Framework `kind: Prompt` file. The project gets a workflow, agents.d/ with
    prompts/, tools.d/ and IMPORTED.md: what each source key became, and each thing approximated
    or dropped, with the source's file:line. Nothing of the source is changed or run.
    """
    from flowrun.manifest.diagnostics import render
    from flowrun.manifest.foreign.registry import convert, detect, format_named

    with reported(False):
        found = detect(source, fmt)
        if found is None:
            what = f"a {format_named(fmt).title} project" if fmt else "a project of a format flowrun imports"
            hint = (
                "name a crew folder, root_agent.yaml, a docker-agent .yaml, ..."
                if fmt is None
                else "check the path, or drop --format"
            )
            fail(f"{source} is not {what}", hint, 2)
        conversion = convert(found)
        if conversion.errors or conversion.workflow is None:
            shown = conversion.diagnostics or []
            click.echo(render(shown, "text", len(conversion.files) or 1), err=True)
            fail(
                f"nothing was written: {source} cannot be made into a runnable workflow",
                "fix the errors above",
                1,
            )
        from flowrun.manifest.foreign.write import planned_files, write_project

        target = output or Path(conversion.workflow.name)
        _check_target(target, planned_files(conversion))
        write_project(conversion, target)
        _report(conversion, target)


def _check_target(target: Path, files: list[str]) -> None:
    if target.exists() and not target.is_dir():
        fail(f"{target} is a file", "give -o a folder to write the project into", 2)
    if target.is_dir() and any(target.iterdir()):
        there = [f for f in files if (target / f).exists()]
        what = f"it holds {there[0]}" if there else "it is not empty"
        fail(f"{target} is not a new or empty folder: {what}", "give -o a new folder", 2)


def _report(conversion: object, target: Path) -> None:
    from flowrun.manifest.checks.validate import validate_paths
    from flowrun.manifest.diagnostics import render
    from flowrun.manifest.foreign.conversion import Conversion

    assert isinstance(conversion, Conversion) and conversion.workflow is not None
    shown = os.path.relpath(target)
    counts = {
        how: sum(n.how == how for n in conversion.notes) for how in ("mapped", "approximated", "dropped")
    }
    agents = sum(p.kind == "agent" for p in conversion.pieces)
    tools = sum(p.kind == "tool" for p in conversion.pieces)
    click.echo(
        f"wrote {shown}/: {conversion.workflow.name}.yaml, {agents} agent(s), {tools} tool(s), IMPORTED.md"
    )
    mapped, near, dropped = counts["mapped"], counts["approximated"], counts["dropped"]
    click.echo(f"  {mapped} key(s) mapped, {near} approximated, {dropped} dropped (IMPORTED.md lists them)")
    diagnostics, checked = validate_paths([target])
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        click.echo(render(diagnostics, "text", checked), err=True)
        fail(
            f"the project in {shown} does not validate",
            "fix it from the errors above (IMPORTED.md says where each part came from)",
            1,
        )
    inputs = " ".join(f"--{name} ..." for name in conversion.workflow.data.get("inputs", {}))
    click.echo(
        f"next: flowrun {os.path.join(shown, conversion.workflow.name + '.yaml')} {inputs} --dry-run".replace(
            "  ", " "
        )
    )
    sys.exit(0)
