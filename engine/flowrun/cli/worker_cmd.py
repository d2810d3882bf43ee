"""`flowrun worker WORKFLOW.yaml...`: a worker process that takes runs of the workflows from a
queue and executes them (queue/worker.py); `flowrun workers`: the workers of a queue, their
runs and their last heartbeat. The queue is the runs folder's own (`embedded`, SQLite) or a
Postgres database (`--queue postgresql://...`), shared by every machine that mounts the runs
folder at the same path."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from flowrun.cli.common import fail, reported
from flowrun.cli.run_options import Command, RunArgs, run_options

if TYPE_CHECKING:
    from flowrun.api import Workflow
    from flowrun.queue.store import Limits
    from flowrun.queue.worker import WorkerConfig
    from flowrun.runtime.options import RunOptions

QUEUE_HELP = "The queue: `embedded` (SQLite in the runs folder, one machine) or a postgresql:// URL."


def queue_option(default: str | None) -> Callable[[Command], Command]:
    return click.option("--queue", "queue", metavar="URL", default=default, help=QUEUE_HELP)


@dataclass(frozen=True)
class WorkerArgs:
    """How each worker runs (`flowrun worker`, and the workers of `serve http --workers`)."""

    concurrency: int = 32
    lease_s: float = 30.0
    drain_s: float = 30.0
    max_runs: int | None = None
    max_runs_per: tuple[str, ...] = ()

    @classmethod
    def given(cls, values: Mapping[str, object]) -> WorkerArgs:
        def number(name: str) -> float:
            value = values[name]
            assert isinstance(value, int | float)
            return value

        max_runs = values["max_runs"]
        per = values["max_runs_per"]
        return cls(
            int(number("concurrency")),
            number("lease_s"),
            number("drain_s"),
            max_runs if isinstance(max_runs, int) else None,
            tuple(str(p) for p in per) if isinstance(per, tuple) else (),
        )

    def config(self) -> WorkerConfig:
        from flowrun.queue.worker import WorkerConfig

        return WorkerConfig(
            self.concurrency, self.lease_s, self.drain_s, limits_of(self.max_runs, self.max_runs_per)
        )

    def argv(self) -> list[str]:
        """These options as `flowrun worker` takes them."""
        argv = ["--concurrency", str(self.concurrency), "--lease", str(self.lease_s)]
        argv += ["--drain-timeout", str(self.drain_s)]
        if self.max_runs:
            argv += ["--max-runs", str(self.max_runs)]
        for given in self.max_runs_per:
            argv += ["--max-runs-per", given]
        return argv


WORKER_OPTIONS = ("concurrency", "lease_s", "drain_s", "max_runs", "max_runs_per")


def worker_options(function: Command) -> Command:
    """What `flowrun worker` and `serve http --workers` share: how each worker runs; the
    command gets them as `worker_args` (a WorkerArgs)."""

    @functools.wraps(function)
    def command(*args: object, **kwargs: object) -> object:
        given = {name: kwargs.pop(name) for name in WORKER_OPTIONS}
        return function(*args, worker_args=WorkerArgs.given(given), **kwargs)

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
    wrapped: Command = command
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped


def load_served(workflows: tuple[Path, ...], run_args: RunArgs) -> tuple[list[Workflow], RunOptions]:
    """The served workflows (their .env files read first; two with one name refused) and the
    options of every run."""
    from flowrun.api import load
    from flowrun.cli.env_files import load_env_files

    load_env_files(workflows)
    options = run_args.options()
    loaded = [load(path) for path in workflows]
    names = [wf.name for wf in loaded]
    if len(set(names)) != len(names):
        fail("two workflows have the same name", "serve workflows with different `name:`s", 2)
    return loaded, options


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
def worker(workflows: tuple[Path, ...], queue: str, worker_args: WorkerArgs, run_args: RunArgs) -> None:
    """Take runs of WORKFLOWS from a queue and execute them until SIGTERM (which drains)."""
    import asyncio

    from flowrun.queue.databases import open_database
    from flowrun.queue.store import Store
    from flowrun.queue.worker import Worker

    config = worker_args.config()
    with reported(False):
        loaded, _ = load_served(workflows, run_args)
        store = Store(open_database(queue, run_args.runs_dir)).prepare()
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
