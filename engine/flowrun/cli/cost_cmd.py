"""`flowrun cost WORKFLOW.yaml`: the worst case of a run before anything is sent
(manifest/ceiling.py), the workflow limits that cap it, and the median and 90th-percentile cost
and duration of the earlier runs of the same workflow in the runs folder (cli/views/cost_view.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from flowrun.cli.common import reported, warn_skipped
from flowrun.cli.run_options import RunArgs, run_options
from flowrun.cli.views.cost_view import estimate

if TYPE_CHECKING:
    from flowrun.api import Workflow


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("workflow", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@run_options("model", "overrides", "inputs_file", "runs_dir", "dry_run")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_context
def cost(ctx: click.Context, workflow: Path, fmt: str, run_args: RunArgs) -> None:
    """Print a run's worst-case cost per agent and sub-agent tree, and earlier runs' spread.

    Nothing is sent. The ceiling comes from each agent's max_steps, its models' max_tokens,
    context_window and prices, the entries' max_calls and per-call budgets, and the workflow's
    limits; the workflow's inputs (--NAME value, --inputs FILE) are optional and count only
    where they bound the run (a foreach over a list input)."""
    with reported(False):
        from flowrun.api import load
        from flowrun.cli.env_files import load_env_files

        load_env_files([workflow])
        options = run_args.options()
        wf = load(workflow, list(options.overrides), prefetch=False)  # nothing is sent
        warn_skipped(wf.diagnostics)
        inputs = _given_inputs(wf, list(ctx.args), run_args.inputs_file)
        click.echo(estimate(wf, options, inputs, run_args.runs_dir, fmt))
    sys.exit(0)


def _given_inputs(wf: Workflow, args: list[str], inputs_file: Path | None) -> dict[str, object]:
    """The inputs given, checked as `run` checks them; none given is fine (the ceiling does not
    need them)."""
    from flowrun.cli.input_args import parse_input_args

    if not args and inputs_file is None:
        return {}
    return parse_input_args(wf, args, inputs_file)
