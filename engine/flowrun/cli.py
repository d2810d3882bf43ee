"""The `flowrun` command line. Heavy modules (pydantic, jsonschema, SDKs) are imported inside
the commands that need them, so `flowrun --help` starts fast."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from flowrun._version import __version__

KINDS = ("workflow", "agent", "tool", "models", "script")


class FlowrunGroup(click.Group):
    """`flowrun WORKFLOW.yaml --input x` is short for `flowrun run WORKFLOW.yaml --input x`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            first = args[0]
            if first.endswith((".yaml", ".yml")) or Path(first).is_file():
                args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group(cls=FlowrunGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="flowrun")
def main() -> None:
    """flowrun: run LLM agent teams described in YAML.

    \b
    flowrun WORKFLOW.yaml --INPUT VALUE ...   run a workflow (same as `flowrun run`)
    flowrun validate [PATH...]                 check manifests
    """


def _internal_error(error: Exception, verbose: bool) -> None:
    """A bug in flowrun, not the user's mistake: one line, the traceback only when asked."""
    if verbose:
        import traceback

        traceback.print_exception(error)
    _fail(
        f"internal error: {type(error).__name__}: {error}",
        "this is a flowrun bug; the run folder (if any) is kept; rerun with -v for the traceback",
        70,
    )


def _fail(message: str, hint: str | None = None, code: int = 1) -> None:
    from flowrun.runtime.events import redact

    click.echo(redact(f"error: {message}"), err=True)
    if hint:
        click.echo(redact(f"  hint: {hint}"), err=True)
    sys.exit(code)


@main.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []}
)
@click.argument("workflow", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Use the offline test provider: checks wiring, costs nothing.")
@click.option("--model", "model_override", metavar="PROVIDER:MODEL", help="Use this model for every agent.")
@click.option(
    "--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"), show_default=True
)
@click.option("--run-id", help="Name of the run folder (default: timestamp + workflow name).")
@click.option("--stream/--no-stream", default=None, help="Force streaming on or off for every model.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the final summary.")
@click.option("-v", "--verbose", is_flag=True, help="Print every model call and tool call.")
@click.option("-h", "--help", "show_help", is_flag=True, help="Show this message and the workflow's inputs.")
@click.pass_context
def run(
    ctx: click.Context,
    workflow: Path | None,
    dry_run: bool,
    model_override: str | None,
    runs_dir: Path,
    run_id: str | None,
    stream: bool | None,
    quiet: bool,
    verbose: bool,
    show_help: bool,
) -> None:
    """Run WORKFLOW.yaml; each of its inputs is an option (--question "...")."""
    from flowrun.errors import FlowrunError
    from flowrun.runtime.launch import load_for_run, parse_inputs, workflow_help

    try:
        if show_help or workflow is None:
            click.echo(ctx.get_help())
            if workflow is not None and workflow.is_file():
                click.echo("\n" + workflow_help(workflow))
            sys.exit(0 if show_help else 2)
        if not workflow.is_file():
            _fail(f"no workflow file '{workflow}'", "give the path of a workflow .yaml file", 2)
        loaded = load_for_run(workflow)
        inputs = parse_inputs(loaded, list(ctx.args))
        from flowrun.runtime.launch import start_run

        code = start_run(
            loaded,
            inputs,
            dry_run=dry_run,
            model_override=model_override,
            runs_dir=runs_dir,
            run_id=run_id,
            stream=stream,
            verbosity=-1 if quiet else (1 if verbose else 0),
        )
    except FlowrunError as e:
        _fail(e.message, e.hint, e.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted", "the run folder is kept: continue with `flowrun resume RUN_DIR`", 130)
    except Exception as e:
        _internal_error(e, verbose)
    sys.exit(code)


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-q", "--quiet", is_flag=True, help="Print only the final summary.")
@click.option("-v", "--verbose", is_flag=True, help="Print every model call and tool call.")
def resume(run_dir: Path, quiet: bool, verbose: bool) -> None:
    """Continue a stopped run (crash, kill, Ctrl-C) from its event log."""
    from flowrun.errors import FlowrunError
    from flowrun.runtime.launch import resume_run

    try:
        code = resume_run(run_dir, -1 if quiet else (1 if verbose else 0))
    except FlowrunError as e:
        _fail(e.message, e.hint, e.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted", f"continue with `flowrun resume {run_dir}`", 130)
    except Exception as e:
        _internal_error(e, verbose)
    sys.exit(code)


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--into", type=click.Path(file_okay=False, path_type=Path), help="Folder for the replay.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the final summary.")
@click.option("-v", "--verbose", is_flag=True, help="Print every model call and tool call.")
def replay(run_dir: Path, into: Path | None, quiet: bool, verbose: bool) -> None:
    """Re-run a recorded run offline from its event log; report the first differing step."""
    from flowrun.errors import FlowrunError
    from flowrun.runtime.launch import replay_run

    try:
        code = replay_run(run_dir, into, -1 if quiet else (1 if verbose else 0))
    except FlowrunError as e:
        _fail(e.message, e.hint, e.exit_code)
    except Exception as e:
        _internal_error(e, verbose)
    sys.exit(code)


@main.command()
@click.option(
    "--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"), show_default=True
)
def runs(runs_dir: Path) -> None:
    """List runs: id, workflow, status, steps, tokens, cost, duration."""
    from flowrun.errors import FlowrunError
    from flowrun.runtime.inspect_runs import format_runs, list_runs

    try:
        click.echo(format_runs(list_runs(runs_dir)))
    except FlowrunError as e:
        _fail(e.message, e.hint, e.exit_code)


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, path_type=Path))
def show(run_dir: Path) -> None:
    """Print a run's tree of agents and tool calls with timings and tokens."""
    from flowrun.errors import FlowrunError
    from flowrun.runtime.inspect_runs import show_run

    try:
        click.echo(show_run(run_dir))
    except FlowrunError as e:
        _fail(e.message, e.hint, e.exit_code)


@main.command()
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


@main.command()
@click.argument("kind", required=False, type=click.Choice(KINDS))
@click.option(
    "--write", "write_dir", type=click.Path(file_okay=False, path_type=Path), help="Write all schemas here."
)
def schema(kind: str | None, write_dir: Path | None) -> None:
    """Print the JSON Schema of a manifest KIND (default: workflow)."""
    from flowrun.manifest.schema_export import schema_text, write_all

    if write_dir is not None:
        for path in write_all(write_dir):
            click.echo(path)
        return
    click.echo(schema_text(kind or "workflow"), nl=False)
