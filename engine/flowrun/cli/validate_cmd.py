"""`flowrun validate`: every problem of the manifests under the given paths, in one pass."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

if TYPE_CHECKING:
    from flowrun.manifest.diagnostics import Diagnostic
    from flowrun.tools.sandbox import Mode

USAGE_EXIT = 2


class JsonAwareCommand(click.Command):
    """A usage error (a path that does not exist, a bad option) is reported as JSON on stdout
    when the command line asked for `--format json`, so a program reading the output always
    gets JSON; otherwise click's usual message."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        json_wanted = _wants_json(args)  # before click consumes the list
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as e:
            if not json_wanted:
                raise
            click.echo(usage_report(e.format_message()))
            ctx.exit(USAGE_EXIT)


def _wants_json(args: list[str]) -> bool:
    return any(
        a == "--format=json" or (a == "--format" and i + 1 < len(args) and args[i + 1] == "json")
        for i, a in enumerate(args)
    )


def usage_report(message: str, hint: str = "") -> str:
    """The JSON shape of `--format json`, for a run that checked nothing because of a usage error."""
    return json.dumps(
        {
            "ok": False,
            "files_checked": 0,
            "errors": 1,
            "warnings": 0,
            "diagnostics": [],
            "usage_error": {"message": message, "hint": hint},
        },
        indent=2,
    )


@click.command(cls=JsonAwareCommand)
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
    help="Also start each MCP server (stdio ones in the sandbox) and check the tools named exist, "
    "and read each A2A agent's card.",
)
@click.option(
    "--sandbox",
    type=click.Choice(["required", "auto", "off"]),
    default=None,
    help="With --connect: start the stdio servers under this sandbox mode, as `flowrun run --sandbox` would.",
)
def validate(
    paths: tuple[Path, ...], fmt: str, strict: bool, explain: bool, connect: bool, sandbox: str | None
) -> None:
    """Check manifests: YAML, schema, and cross-references (files or folders; default: .)."""
    from flowrun.manifest.checks.validate import validate_paths
    from flowrun.manifest.diagnostics import render

    if explain and fmt != "text":
        usage_error(fmt, "--explain goes with --format text", "drop --explain or --format")
    targets = list(paths) or [Path(".")]
    _load_env_files(fmt, targets)
    diagnostics, checked = validate_paths(targets)
    if checked == 0:
        shown = ", ".join(str(p) for p in targets)
        usage_error(
            fmt,
            f"no manifests found in {shown}",
            "point validate at a workflow file or a folder holding one, agents.d/, tools.d/, models.d/, "
            ".claude/, .mcp.json or a skill folder (a top-level YAML file counts when it has a `kind:` line)",
        )
    if sandbox is not None and not connect:
        usage_error(fmt, "--sandbox goes with --connect", "add --connect to start the MCP servers")
    if connect:
        found = connected(targets, sandbox)
        diagnostics = sorted(diagnostics + found, key=lambda d: (d.file, d.line, d.column))
    output = render(diagnostics, fmt, checked)
    if output:
        click.echo(output)
    failing = [d for d in diagnostics if d.severity == "error" or strict]
    if explain and not any(d.severity == "error" for d in diagnostics):
        click.echo("\n".join(explanation(targets)))
    sys.exit(1 if failing else 0)


def _load_env_files(fmt: str, targets: list[Path]) -> None:
    """The `.env` of the current folder and of each path's folder (validate sees the variables
    a run would)."""
    from flowrun.cli.env_files import load_env_files
    from flowrun.errors import FlowrunError

    try:
        load_env_files(targets)
    except FlowrunError as e:
        usage_error(fmt, e.message, e.hint or "")


def usage_error(fmt: str, message: str, hint: str) -> None:
    """Exit 2 with the message: JSON on stdout for --format json, else one line on stderr (and an
    `::error` annotation on stdout for --format github)."""
    if fmt == "json":
        click.echo(usage_report(message, hint))
        sys.exit(USAGE_EXIT)
    if fmt == "github":  # an annotation too, so the CI run shows why nothing was checked
        body = f"{message}. {hint}".replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        click.echo(f"::error title=flowrun validate::{body}")
    from flowrun.cli.common import fail

    fail(message, hint, USAGE_EXIT)


def explanation(paths: list[Path]) -> list[str]:
    """Each workflow's agents with their effective sandbox and approvals."""
    from flowrun.manifest.checks.validate import find_roots
    from flowrun.manifest.project import load_project
    from flowrun.manifest.sandboxing import explain

    lines: list[str] = []
    for root, files in find_roots(paths).items():
        project = load_project(root, files)
        for loaded in project.workflows:
            lines.append(f"\nworkflow {loaded.spec.name} ({loaded.source.display}):")
            base = loaded.source.path.parent.resolve()
            lines += ["  " + line for line in explain(project, loaded.spec, base)]
    return lines


def connected(paths: list[Path], sandbox: str | None = None) -> list[Diagnostic]:
    """`--connect`: the MCP servers of every project under `paths`, started and asked, and the
    cards of its A2A agents read."""
    import asyncio

    from flowrun.manifest.checks.validate import find_roots
    from flowrun.manifest.project import load_project
    from flowrun.runtime.mcp.check import check_servers
    from flowrun.runtime.tool_kinds.a2a import check_cards

    out: list[Diagnostic] = []
    for root, files in find_roots(paths).items():
        project = load_project(root, files)
        out += asyncio.run(check_servers(project, cast("Mode | None", sandbox)))
        out += asyncio.run(check_cards(project))
    return out
