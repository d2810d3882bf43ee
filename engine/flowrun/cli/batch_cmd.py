"""`flowrun batch WORKFLOW.yaml ITEMS`: the workflow once per item, with a progress bar on
stderr (done, failed, running, cost so far, ETA) and a summary on stdout."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from flowrun.cli.common import reported
from flowrun.cli.run_options import RunArgs, run_options

if TYPE_CHECKING:
    from flowrun.batch import BatchSummary
    from flowrun.cli.views.batch_progress import BatchDisplay

RESUME_HINT = "the batch folder is kept: run the same command again to resume it"


@click.command()
@click.argument("workflow", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("items", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-c", "--concurrency", type=int, default=4, show_default=True, help="Items run at once.")
@click.option(
    "--max-cost-usd-per-item", type=float, help="Stop an item's run at this cost (budget_exceeded)."
)
@click.option("--max-cost-usd", type=float, help="Stop the batch at this cost for all items together.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="The batch folder (default: batches/WORKFLOW-ITEMS).",
)
@click.option(
    "--retry-failed", is_flag=True, help="Resume items that failed before (not only interrupted ones)."
)
@click.option(
    "--processes",
    metavar="N|auto",
    help="Local: worker processes the items are spread over (default auto: one per 16 of "
    "--concurrency, at most one per CPU; 1: all in this process).",
)
@click.option(
    "--queue",
    metavar="URL",
    help="Put the items on a queue for `flowrun worker` processes: `embedded` (SQLite in the batch's "
    "runs folder) or a postgresql:// URL.",
)
@click.option(
    "--workers",
    type=click.IntRange(0, 256),
    default=0,
    help="Start this many `flowrun worker` processes on the queue for the batch (alone: the embedded queue).",
)
@click.option("--backend", type=click.Choice(["local", "ray"]), default="local", show_default=True)
@click.option(
    "--address", metavar="ADDR", help="Ray: the cluster to join (default: $RAY_ADDRESS, else a local one)."
)
@click.option("--ray-cpus", type=float, default=1.0, show_default=True, help="Ray: CPUs each item reserves.")
@click.option(
    "--ship-runs/--shared-runs",
    default=None,
    help="Ray: workers send run folders back (default: only workers that cannot see the batch folder).",
)
@run_options(
    "dry_run",
    "model",
    "overrides",
    "stream",
    "quiet",
    "verbose",
    "sandbox",
    "yes",
    "decisions",
    "decide_within",
    help={
        "dry_run": "Use the offline test provider for every item.",
        "model": "Use this model for every agent, or with AGENT= for one agent; repeatable.",
        "overrides": "Change a manifest value for every item, as for `run` (repeatable).",
        "quiet": "Print only the summary.",
        "verbose": "Also print a line for every item that ends.",
    },
)
def batch(
    workflow: Path,
    items: Path,
    concurrency: int,
    max_cost_usd_per_item: float | None,
    max_cost_usd: float | None,
    out: Path | None,
    retry_failed: bool,
    processes: str | None,
    queue: str | None,
    workers: int,
    backend: str,
    address: str | None,
    ray_cpus: float,
    ship_runs: bool | None,
    run_args: RunArgs,
) -> None:
    """Run WORKFLOW.yaml once per item of ITEMS (JSONL, JSON or CSV), resumably."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # like Ctrl-C: resumable
    with reported(run_args.verbose, RESUME_HINT):
        import asyncio
        from dataclasses import replace

        from flowrun.cli.env_files import load_env_files

        load_env_files([workflow])

        from flowrun.batch import run_batch
        from flowrun.cli.views.batch_progress import make_display

        # -q and -v are about this display: the items' flowrun.log keep their default level
        options = replace(run_args.options(), verbosity=0)
        display = make_display(run_args.verbosity)
        try:
            summary = asyncio.run(
                run_batch(
                    workflow,
                    items,
                    options,
                    out=out,
                    concurrency=concurrency,
                    max_cost_usd_per_item=max_cost_usd_per_item,
                    max_cost_usd=max_cost_usd,
                    retry_failed=retry_failed,
                    backend=backend,
                    address=address,
                    ray_cpus=ray_cpus,
                    ship_runs=ship_runs,
                    processes=processes,  # type: ignore[arg-type]  # checked by run_batch
                    queue=queue,
                    workers=workers,
                    on_progress=display.update if display is not None else None,
                )
            )
        finally:
            _close(display)
        print_summary(summary)
    sys.exit(summary.exit_code)


def _close(display: BatchDisplay | None) -> None:
    if display is not None:
        display.close()


def print_summary(summary: BatchSummary) -> None:
    parts = [f"{summary.completed} completed", f"{summary.failed} failed"]
    if summary.waiting:
        parts.append(f"{summary.waiting} waiting")
    if summary.stopped:
        parts.append(f"{summary.stopped} stopped")
    if summary.pending:
        parts.append(f"{summary.pending} not started")
    click.echo(f"batch: {summary.total} items: {', '.join(parts)} ({summary.ran} run now)")
    cost = f"${summary.cost_usd:.4f}" if summary.cost_usd is not None else "-"
    click.echo(f"tokens {summary.total_tokens}, cost {cost}")
    click.echo(f"status: {summary.status}")
    click.echo(f"results: {os.path.relpath(summary.results)}")
    if summary.message:
        click.echo(f"stopped: {summary.message}; {RESUME_HINT} (with a higher --max-cost-usd)", err=True)
    elif summary.failed:
        click.echo("some items did not complete: see results.jsonl; --retry-failed resumes them", err=True)
    if summary.waiting:
        click.echo(
            "some items wait for a decision: results.jsonl names their run folders; take each with "
            "`flowrun approve RUN_DIR ...` or `flowrun answer RUN_DIR ...`, then run the batch again",
            err=True,
        )
