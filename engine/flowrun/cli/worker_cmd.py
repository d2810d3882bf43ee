"""`flowrun worker WORKFLOW.yaml...`: a worker process that takes runs of the workflows from a
queue and executes them (queue/worker.py); `flowrun workers`: the workers of a queue, their
runs and their last heartbeat. The queue is the runs folder's own (`embedded`, SQLite) or a
Postgres database (`--queue postgresql://...`), shared by every machine that mounts the runs
folder at the same path."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from flowrun.cli.common import fail, reported
from flowrun.cli.run_options import Command, RunArgs, run_options

if TYPE_CHECKING:
    from flowrun.queue.store import Limits

QUEUE_HELP = "The queue: `embedded` (SQLite in the runs folder, one machine) or a postgresql:// URL."


def queue_option(default: str | None) -> Callable[[Command], Command]:
    return click.option("--queue", "queue", metavar="URL", default=default, help=QUEUE_HELP)


def worker_options(command: Command) -> Command:
    """What `flowrun worker` and `serve http --workers` share: how each worker runs."""
    options: list[Callable[[Command], Command]] = [
        click.option(
            "--concurrency",
            type=click.IntRange(1, 10_000),
            default=32,
            show_default=True,
            help="Runs at once in one worker.",
        ),
        click.option(
            "--lease",
            "lease_s",
            type=click.FloatRange(1.0),
            default=30.0,
            show_default=True,
            help="Seconds a worker's hold on a run lasts past its last heartbeat (a beat every third): "
            "how soon another worker takes over the runs of one that died.",
        ),
        click.option(
            "--drain-timeout",
            "drain_s",
            type=click.FloatRange(0.0),
            default=30.0,
            show_default=True,
            help="On SIGTERM, seconds the running runs have to end before they are stopped and "
            "handed back to the queue (a second SIGTERM: at once).",
        ),
        click.option(
            "--max-runs",
            type=click.IntRange(1),
            help="At most this many runs at once over all the queue's workers.",
        ),
        click.option(
            "--max-runs-per",
            "max_runs_per",
            multiple=True,
            metavar="WORKFLOW=N",
            help="At most N runs of WORKFLOW at once over all the queue's workers (repeatable).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def limits_of(max_runs: int | None, max_runs_per: tuple[str, ...]) -> Limits:
    from flowrun.queue.store import Limits

    per: dict[str, int] = {}
    for given in max_runs_per:
        name, _, count = given.partition("=")
        if not name or not count.isdigit() or int(count) < 1:
            fail(f"--max-runs-per {given!r} is not WORKFLOW=N", "e.g. --max-runs-per research=4", 2)
        per[name] = int(count)
    return Limits(max_runs, per or None)


@click.command()
@click.argument("workflows", nargs=-1, required=True, type=click.Path(path_type=Path))
@queue_option("embedded")
@worker_options
@run_options("runs_dir")
def worker(
    workflows: tuple[Path, ...],
    queue: str,
    concurrency: int,
    lease_s: float,
    drain_s: float,
    max_runs: int | None,
    max_runs_per: tuple[str, ...],
    run_args: RunArgs,
) -> None:
    """Take runs of WORKFLOWS from a queue and execute them until SIGTERM (which drains)."""
    import asyncio

    from flowrun.cli.serve_cmd import load_served
    from flowrun.queue.databases import open_database
    from flowrun.queue.store import Store
    from flowrun.queue.worker import Worker, WorkerConfig

    limits = limits_of(max_runs, max_runs_per)
    with reported(False):
        loaded, _ = load_served(workflows, run_args)
        store = Store(open_database(queue, run_args.runs_dir)).prepare()
        config = WorkerConfig(concurrency, lease_s, drain_s, limits)
        running = Worker(store, run_args.runs_dir, loaded, config, lambda line: click.echo(line, err=True))
        asyncio.run(running.serve())


@click.command()
@queue_option("embedded")
@run_options("runs_dir")
@click.option("--all", "show_all", is_flag=True, help="Also the workers stopped or lost.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per worker.")
def workers(queue: str, run_args: RunArgs, show_all: bool, as_json: bool) -> None:
    """List a queue's workers: their state, their runs and their last heartbeat."""
    import dataclasses
    import json

    from flowrun.queue.databases import open_database
    from flowrun.queue.store import Store

    with reported(False):
        if queue == "embedded" and not run_args.runs_dir.is_dir():
            fail(f"no runs folder at {run_args.runs_dir}", "pass --runs-dir (or --queue URL)")
        found = Store(open_database(queue, run_args.runs_dir)).prepare().workers(show_all)
    if as_json:
        for row in found:
            click.echo(json.dumps(dataclasses.asdict(row)))
        return
    if not found:
        click.echo("no workers" + ("" if show_all else " up (--all: also those stopped or lost)"))
        return
    click.echo(f"{'worker':<36} {'state':<9} {'runs':>9}  {'heartbeat':>10}  started")
    for row in found:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row.started))
        beat = f"{row.age_s:.1f} s ago"
        click.echo(
            f"{row.id:<36} {row.state:<9} {len(row.runs):>4}/{row.concurrency:<4}  {beat:>10}  {started}"
        )
        for run_id in row.runs:
            click.echo(f"  {run_id}")
