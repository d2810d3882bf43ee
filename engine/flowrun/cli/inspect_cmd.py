"""`flowrun runs` and `flowrun show`: looking at run folders (see run_views.py)."""

from __future__ import annotations

from pathlib import Path

import click

from flowrun.cli.common import reported


@click.command()
@click.option(
    "--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"), show_default=True
)
def runs(runs_dir: Path) -> None:
    """List runs: id, workflow, status, steps, tokens, cost, duration."""
    with reported(verbose=False):
        from flowrun.cli.run_views import format_runs, list_runs, output_width

        click.echo(format_runs(list_runs(runs_dir), width=output_width()))


@click.command()
@click.argument("run_dir", type=click.Path(exists=True, path_type=Path))
@click.option("--prompts", is_flag=True, help="Print each agent's system prompt and tool list instead.")
@click.option("--agent", metavar="NAME", help="With --prompts: only this agent's instances.")
def show(run_dir: Path, prompts: bool, agent: str | None) -> None:
    """Print a run's tree of agents and tool calls with timings and tokens."""
    with reported(verbose=False):
        from flowrun.cli.run_views import output_width, show_prompts, show_run

        if agent is not None and not prompts:
            from flowrun.errors import UsageError

            raise UsageError("--agent goes with --prompts", "flowrun show RUN_DIR --prompts --agent NAME")
        click.echo(show_prompts(run_dir, agent) if prompts else show_run(run_dir, width=output_width()))
