"""`flowrun run` (and the `flowrun WORKFLOW.yaml` shorthand), `flowrun resume`, `flowrun replay`:
the command line over the Python API, with progress on stderr and a summary on stdout."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from flowrun.cli.common import reported, verbosity

if TYPE_CHECKING:
    from flowrun.api import ReplayResult, RunResult, Workflow
    from flowrun.cli.progress import Progress
    from flowrun.manifest.specs import InputSpec

R = TypeVar("R")
RESUME_HINT = "the run folder is kept: continue with `flowrun resume RUN_DIR`"


@click.command(
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
    with reported(verbose, RESUME_HINT):
        if show_help or workflow is None:
            click.echo(ctx.get_help())
            if workflow is not None and workflow.is_file():
                click.echo("\n" + workflow_help(workflow))
            sys.exit(0 if show_help else 2)
        from flowrun.api import load

        wf = load(workflow)
        inputs = parse_input_args(wf, list(ctx.args))
        level = verbosity(quiet, verbose)
        result = _with_progress(
            level,
            lambda on_event: wf.run(
                inputs,
                runs_dir=runs_dir,
                run_id=run_id,
                model=model_override,
                dry_run=dry_run,
                stream=stream,
                on_event=on_event,
                ask_user=ask_on_terminal if sys.stdin.isatty() else None,
                verbosity=level,
            ),
        )
        print_summary(result, level, wf.spec.output)
    sys.exit(result.exit_code)


@click.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-q", "--quiet", is_flag=True, help="Print only the final summary.")
@click.option("-v", "--verbose", is_flag=True, help="Print every model call and tool call.")
def resume(run_dir: Path, quiet: bool, verbose: bool) -> None:
    """Continue a stopped run (crash, kill, Ctrl-C) from its event log."""
    with reported(verbose, f"continue with `flowrun resume {run_dir}`"):
        from flowrun.api import resume as resume_run

        level = verbosity(quiet, verbose)
        ask = ask_on_terminal if sys.stdin.isatty() else None
        result = _with_progress(
            level, lambda on_event: resume_run(run_dir, on_event=on_event, ask_user=ask, verbosity=level)
        )
        if result.message == "already completed; nothing to resume":
            click.echo(f"{run_dir} already completed; nothing to resume")
        else:
            print_summary(result, level, None)
    sys.exit(result.exit_code)


@click.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--into", type=click.Path(file_okay=False, path_type=Path), help="Folder for the replay.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the final summary.")
@click.option("-v", "--verbose", is_flag=True, help="Print every model call and tool call.")
def replay(run_dir: Path, into: Path | None, quiet: bool, verbose: bool) -> None:
    """Re-run a recorded run offline from its event log; report the first differing step."""
    with reported(verbose):
        from flowrun.api import replay as replay_run

        level = verbosity(quiet, verbose)
        result = _with_progress(
            level, lambda on_event: replay_run(run_dir, into=into, on_event=on_event, verbosity=level)
        )
        print_summary(result, level, None)
    sys.exit(replay_exit(result))


def replay_exit(result: ReplayResult) -> int:
    if result.output_reproduced is not None:
        output = result.declared_output or "the output"
        state = "reproduced" if result.output_reproduced else "DIFFERS from the recording"
        click.echo(f"output {state}: {output}")
        return result.exit_code if result.output_reproduced else 1
    if result.status != result.recorded_status:
        click.echo(f"replay ended {result.status}; the recorded run ended {result.recorded_status}", err=True)
        return result.exit_code or 1
    return result.exit_code


# ---------------------------------------------------------------- helpers


def _with_progress(level: int, start: Callable[[Progress | None], Coroutine[Any, Any, R]]) -> R:
    """Run the API call with the progress display subscribed; always close the display."""
    from flowrun.cli.progress import make_progress
    from flowrun.redaction import Redactor

    progress = make_progress(level, Redactor().text)
    try:
        return asyncio.run(start(progress))
    finally:
        if progress is not None:
            progress.close()


def print_summary(result: RunResult, level: int, declared_output: str | None) -> None:
    if level >= 0:
        click.echo("")
        click.echo(usage_table(result.usage))
    click.echo(f"status: {result.status}")
    click.echo(f"run folder: {os.path.relpath(result.run_dir)}")
    if result.output:
        click.echo(f"output: {os.path.relpath(result.output)}")
    elif declared_output:
        click.echo(f"output: {declared_output} was not written")
    if result.status != "completed" and result.message:
        click.echo(f"error: {result.message.splitlines()[0][:500]}", err=True)


def usage_table(usage: dict[str, Any]) -> str:
    """Tokens and cost per agent and model (from usage.json's shape)."""
    rows = [
        f"{'agent':<16} {'model':<28} {'calls':>5} {'input':>9} {'output':>8} {'cached':>8} {'cost $':>9}"
    ]
    for line in usage.get("by_agent_model", []):
        u = line.get("usage", {})
        cost = f"{line['cost_usd']:.4f}" if line.get("cost_usd") is not None else "-"
        model = str(line["model"])[:28]
        rows.append(
            f"{line['agent']:<16} {model:<28} {line['calls']:>5} {u.get('input_tokens', 0):>9} "
            f"{u.get('output_tokens', 0):>8} {u.get('cache_read_tokens', 0):>8} {cost:>9}"
        )
    total_cost = usage.get("total_cost_usd")
    total = f"{total_cost:.4f}" if total_cost is not None else "-"
    rows.append(f"total tokens {usage.get('total_tokens', 0)}, cost ${total}")
    return "\n".join(rows)


def parse_input_args(wf: Workflow, args: list[str]) -> dict[str, Any]:
    """`--name value`, `--name=value` and bare boolean flags for the workflow's inputs."""
    from flowrun.errors import UsageError
    from flowrun.runtime.inputs import resolve_inputs

    declared = wf.inputs
    options = {name.replace("_", "-"): name for name in declared} | {name: name for name in declared}
    values: dict[str, Any] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--"):
            raise UsageError(f"unexpected argument {arg!r}", "inputs are given as --name value")
        key, eq, inline = arg[2:].partition("=")
        name = options.get(key)
        if name is None:
            known = ", ".join(f"--{n}" for n in declared) or "(none)"
            raise UsageError(f"unknown option --{key} for workflow '{wf.name}'", f"its inputs: {known}")
        if eq:
            values[name] = inline
        elif declared[name].type == "boolean" and (i + 1 >= len(args) or args[i + 1].startswith("--")):
            values[name] = "true"
        elif i + 1 < len(args):
            i += 1
            values[name] = args[i]
        else:
            raise UsageError(f"--{key} needs a value")
        i += 1
    return resolve_inputs(declared, values, wf.name)


def workflow_help(path: Path) -> str:
    from flowrun.api import load

    wf = load(path)
    lines = [f"Workflow '{wf.name}': {(wf.spec.description or '').strip()}", "Inputs:"]
    for name, inp in wf.inputs.items():
        lines.append(f"  --{name} {inp.type.upper():<8} {inp.description or ''} ({_need(inp)})")
    return "\n".join(lines)


def _need(inp: InputSpec) -> str:
    return "required" if inp.is_required else f"default {inp.default!r}"


async def ask_on_terminal(question: str) -> str:
    """ask_user on an interactive run: the question on stderr, the answer from stdin."""

    def ask() -> str:
        print(f"\n? {question}", file=sys.stderr, flush=True)
        return sys.stdin.readline().rstrip("\n")

    return await asyncio.to_thread(ask)
