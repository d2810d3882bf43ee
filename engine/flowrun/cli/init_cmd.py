"""`flowrun init` and `flowrun new`: a runnable project from a shipped example, and one agent,
tool or skill added to a project (manifest/scaffold.py decides the files; nothing is
overwritten)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from flowrun.cli.common import reported

DEFAULT_TEMPLATE = "research"


@click.command()
@click.argument("template", required=False)
@click.argument("directory", required=False, type=click.Path(path_type=Path))
@click.option("--list", "show_list", is_flag=True, help="List the templates and what each shows.")
def init(template: str | None, directory: Path | None, show_list: bool) -> None:
    """Write a runnable project from a shipped example into DIR (new or empty; default: .).

    TEMPLATE is an example's name (default: research); `flowrun init --list` lists them. One
    argument that is no template's name is the folder (`flowrun init my-project`), with the
    default template. The project gets the workflow, its agents, prompts, tools, skills and
    schemas, a copy of the JSON Schema files its manifests' yaml-language-server lines point at,
    and a .gitignore.
    """
    from flowrun.manifest import scaffold

    with reported(False):
        if show_list:
            found = scaffold.templates()
            width = max(len(name) for name in found)
            for name, chosen in found.items():
                click.echo(f"{name:<{width}}  {chosen.description}")
            return
        if template is not None and directory is None and scaffold.is_folder_name(template):
            directory, template = Path(template), None  # `flowrun init my-project`
        chosen = scaffold.template(template or DEFAULT_TEMPLATE)
        target = directory or Path(".")
        written = scaffold.write_new(target, scaffold.project_files(chosen))
    shown = os.path.relpath(target)
    how = " (the default; `flowrun init --list` shows the others)" if template is None else ""
    click.echo(f"wrote {len(written)} files into {shown}/ from the '{chosen.name}' example{how}:")
    for rel in _summary(written):
        click.echo(f"  {rel}")
    step = "" if shown == "." else f"cd {shown} && "
    click.echo(f"next: {step}flowrun validate && flowrun {chosen.workflow.name} --help")


def _summary(written: list[str]) -> list[str]:
    """The top-level files, and each folder with its number of files."""
    folders: dict[str, int] = {}
    out: list[str] = []
    for rel in written:
        top, sep, _ = rel.partition("/")
        if sep:
            folders[top] = folders.get(top, 0) + 1
        else:
            out.append(rel)
    return out + [
        f"{name}/ ({count} file{'s' if count > 1 else ''})" for name, count in sorted(folders.items())
    ]


@click.command()
@click.argument("kind", type=click.Choice(["agent", "tool", "skill"]))
@click.argument("name")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The project folder (where the workflow is).",
)
def new(kind: str, name: str, directory: Path) -> None:
    """Add one agent, tool or skill to a project: a file that validates, never over one.

    agent: agents.d/NAME.yaml (named like a built-in agent: an override that extends it, so a
    prompts/ file of the project is used); tool: tools.d/NAME.yaml and its Python function in
    tools/NAME.py; skill: skills/NAME/SKILL.md (Agent Skills format).
    """
    from flowrun.manifest.scaffold import new_files, skill_name_warning, write_files

    with reported(False):
        files = new_files(kind, name, directory)
        written = write_files(directory, files)
    if kind == "skill" and (warning := skill_name_warning(name)):
        click.echo(f"warning: {warning}", err=True)
    for rel in written:
        click.echo(f"wrote {os.path.relpath(directory / rel)}")
    hints = {
        "agent": "list it in a workflow's `entry`/`steps` or another agent's `tools`; then flowrun validate",
        "tool": f"list {name} in an agent's `tools`; then flowrun validate (it imports tools/ to check it)",
        "skill": "an agent reads it with use_skill; then flowrun validate",
    }
    click.echo(f"next: {hints[kind]}")
