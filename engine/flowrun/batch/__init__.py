"""Many inputs through one workflow: `flowrun batch WORKFLOW.yaml ITEMS` and `flowrun.run_batch`.

    import flowrun

    summary = await flowrun.run_batch("examples/research.yaml", "questions.jsonl", concurrency=20)
    print(summary.status, summary.completed, summary.failed, summary.cost_usd, summary.results)

Each item of ITEMS (JSONL, JSON or CSV, batch/items.py) runs in its own run folder of the batch folder
(batch/folder.py); the local backend runs them as tasks of one event loop (batch/local.py), or of
several worker processes' loops (`processes`, batch/processes.py), the Ray backend as Ray tasks
(batch/ray_backend.py), the queue backend as jobs of a queue that `flowrun worker` processes
execute (`queue`, batch/queued.py). Running the same batch again skips completed
items, resumes stopped ones (cancelled, interrupted) and, with `retry_failed`, failed ones."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Literal

from flowrun.api import Workflow, load
from flowrun.batch.folder import BatchFolder, ItemResult
from flowrun.batch.items import Item, read_items
from flowrun.batch.jobs import portable_overrides
from flowrun.batch.runner import (
    Backend,
    BatchProgress,
    BatchSummary,
    OnProgress,
    check_prices,
    execute,
    options_record,
)
from flowrun.errors import UsageError
from flowrun.paths import fitting_name
from flowrun.runtime.options import RunOptions

__all__ = ["BatchProgress", "BatchSummary", "Item", "ItemResult", "default_folder", "read_items", "run_batch"]

BACKENDS = ("local", "ray")
PROCESSES_HINT = (
    "give a whole number of processes (1 runs every item in this process) or auto "
    "(the default: one per 16 of --concurrency, at most one per CPU)"
)


async def run_batch(
    workflow: str | Path | Workflow,
    items: str | Path,
    options: RunOptions | None = None,
    *,
    out: str | Path | None = None,
    concurrency: int = 4,
    max_cost_usd_per_item: float | None = None,
    max_cost_usd: float | None = None,
    retry_failed: bool = False,
    backend: str = "local",
    address: str | None = None,
    ray_cpus: float = 1.0,
    ship_runs: bool | None = None,
    processes: int | Literal["auto"] | None = None,
    queue: str | None = None,
    workers: int = 0,
    on_progress: OnProgress | None = None,
    **changes: object,
) -> BatchSummary:
    """Run `workflow` once per item of `items` into the batch folder `out` (default:
    batches/<workflow>-<items file name>); see the module docstring. Every item runs with
    `options` (a flowrun.RunOptions) and `changes` over it, as `Workflow.run` takes them
    (`model=...`, `dry_run=True`, `overrides=[...]`); `max_cost_usd_per_item` becomes each run's
    `limits.max_cost_usd`. A user's mistake (a bad item, an option out of range, a batch folder
    of another workflow) raises UsageError before anything runs; an item that fails is that
    item's result. `processes` (local backend): worker processes for the items, or "auto" (None:
    one per 16 of `concurrency`, at most one per CPU; 1: this process). `queue` (`embedded` or a
    postgresql:// URL): the items are its jobs, run by `flowrun worker`s (`workers` started here)."""
    opts = RunOptions.given(options, changes, BATCH_KEYWORDS)
    per_item, items_path = max_cost_usd_per_item, Path(items)
    placed = _queued(queue, workers, backend, processes)  # batch.json's record of the queue
    kind = "queue" if placed else backend
    wf, opts, processes_n, record = _prepared(
        workflow, opts, kind, concurrency, processes, per_item, max_cost_usd, ray_cpus
    )
    folder = BatchFolder(Path(out) if out is not None else default_folder(wf, items_path))
    with folder.claimed():  # the same batch started twice at once: the second is refused
        runner = (
            _queue_backend(concurrency, queue, workers, wf, folder)
            if placed
            else _backend(backend, concurrency, processes_n, address, ray_cpus, ship_runs, folder, wf, opts)
        )
        record |= placed or {}
        summary = await _executed(
            wf, folder, runner, items_path, record, opts, retry_failed, max_cost_usd, on_progress
        )
        summary.processes = processes_n
        return summary


async def _executed(
    wf: Workflow,
    folder: BatchFolder,
    runner: Backend,
    items: Path,
    record: dict[str, object],
    options: RunOptions,
    retry_failed: bool,
    max_cost_usd: float | None,
    on_progress: OnProgress | None,
) -> BatchSummary:
    """The batch run by `runner` in its opened folder; batch.json's status written however it ends."""
    listed = await _opened(folder, runner, wf, items, record)
    status = "cancelled"
    try:
        summary = await execute(
            wf,
            listed,
            folder,
            runner,
            options=options,
            retry_failed=retry_failed,
            max_cost_usd=max_cost_usd,
            on_progress=on_progress,
        )
        status = summary.status
    finally:
        folder.write_meta(wf.path, items, record, status)
    return summary


def _prepared(
    workflow: str | Path | Workflow,
    options: RunOptions,
    backend: str,
    concurrency: int,
    processes: int | Literal["auto"] | None,
    per_item: float | None,
    total: float | None,
    ray_cpus: float,
) -> tuple[Workflow, RunOptions, int | None, dict[str, object]]:
    """The workflow with the batch's `--set`s, each item's options, how many processes run the
    items (None: Ray places them) and the options as batch.json records them, the batch's
    settings checked."""
    # the SDKs are imported where the items run: here only when no worker process runs them
    # (and a dry run sends nothing)
    wf = (
        workflow
        if isinstance(workflow, Workflow)
        else load(workflow, list(options.overrides), prefetch=False)
    )
    wf = wf.with_overrides(options.overrides)
    _check_options(concurrency, per_item, total, backend, ray_cpus)
    workers = _processes(processes, backend, concurrency)
    if workers == 1 and not options.dry_run:
        wf.prefetch()
    options = item_options(options, wf, per_item)
    if total is not None or per_item is not None:
        check_prices(wf, options)
    given = None if backend in ("ray", "queue") else ("auto" if processes in (None, "auto") else workers)
    record = options_record(
        options,
        max_cost_usd_per_item=per_item,
        concurrency=concurrency,
        max_cost_usd=total,
        backend=backend,
        processes=given,
    )
    return wf, options, workers, record


async def _opened(
    folder: BatchFolder, runner: Backend, wf: Workflow, items: Path, record: dict[str, object]
) -> list[Item]:
    """The items read and the batch folder opened, while the worker processes start (their
    start-up overlaps this); the workers are closed again when either fails."""
    discard = await _start_early(runner)
    try:
        listed = read_items(items, wf.spec.inputs, wf.name)
        folder.open(wf.path, items, record)
    except BaseException:
        await discard()
        raise
    return listed


BATCH_KEYWORDS = (
    "options",
    "out",
    "concurrency",
    "max_cost_usd_per_item",
    "max_cost_usd",
    "retry_failed",
    "backend",
    "address",
    "ray_cpus",
    "ship_runs",
    "processes",
    "queue",
    "workers",
    "on_progress",
)


def item_options(options: RunOptions, wf: Workflow, max_cost_usd_per_item: float | None) -> RunOptions:
    """What each item's run gets: the batch's options with the workflow's `--set` texts and the
    per-item budget (under a tighter `limits.max_cost_usd` the options already have)."""
    limits = dict(options.limits)
    if max_cost_usd_per_item is not None:
        given = limits.get("max_cost_usd")
        limits["max_cost_usd"] = max_cost_usd_per_item if given is None else min(given, max_cost_usd_per_item)
    return replace(options, overrides=wf.override_texts, limits=limits)


def default_folder(wf: Workflow, items: Path) -> Path:
    """batches/WORKFLOW-ITEMS, the name cut to what a filesystem takes (the same each time)."""
    return Path("batches") / fitting_name(f"{wf.name}-{items.stem}")


def _check_options(
    concurrency: int, per_item: float | None, total: float | None, backend: str, ray_cpus: float
) -> None:
    if concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1, got {concurrency}")
    for name, value in (("--max-cost-usd-per-item", per_item), ("--max-cost-usd", total)):
        if value is not None and value <= 0:
            raise UsageError(f"{name} must be more than 0, got {value}")
    if backend not in (*BACKENDS, "queue"):
        raise UsageError(f"unknown backend {backend!r}", "use local or ray")
    if ray_cpus <= 0:
        raise UsageError(f"--ray-cpus must be more than 0, got {ray_cpus}")


def _processes(value: object, backend: str, concurrency: int) -> int | None:
    """How many processes the local backend runs items in (None for the Ray and queue ones)."""
    if backend == "queue":
        return None
    if backend == "ray":
        if value is not None:
            hint = "the Ray backend places items itself: drop --processes"
            raise UsageError("--processes is for the local backend", hint)
        return None
    if value is None or value == "auto":
        from flowrun.batch.processes import auto_processes

        return auto_processes(concurrency)
    count = value
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        count = int(value)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        message = f"--processes must be a whole number of at least 1, or auto; got {value}"
        raise UsageError(message, PROCESSES_HINT)
    return count


async def _start_early(runner: Backend) -> Callable[[], Awaitable[None]]:
    """Start the process pool's workers (the local backend over several processes); what
    closes them again when the batch stops before it runs."""
    from flowrun.batch.processes import ProcessBackend

    if not isinstance(runner, ProcessBackend):
        return _nothing
    await runner.start()
    return runner.discard


async def _nothing() -> None:
    """Nothing to close: no worker was started early."""


def _queued(queue: str | None, workers: int, backend: str, processes: object) -> dict[str, object] | None:
    """When the items go to a queue (`queue`, or local `workers` on the embedded one): the
    queue as batch.json records it; the choice checked against the other backends'."""
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r}", "use local or ray")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise UsageError(f"--workers must be a whole number of at least 0, got {workers}")
    if queue is None and not workers:
        return None
    if backend == "ray":
        raise UsageError("--queue and --workers are for the local backend", "drop --backend ray or --queue")
    if processes is not None:
        hint = "the queue's workers run the items: drop --processes (--workers N starts N of them)"
        raise UsageError("--processes is not for a batch on a queue", hint)
    if queue not in (None, "embedded"):
        from flowrun.queue.databases import open_database

        open_database(queue, Path())  # a queue that is no queue: said before anything runs
    from flowrun.queue.databases import shown

    return {"queue": shown(queue), "workers": workers}


def _queue_backend(
    concurrency: int, queue: str | None, workers: int, wf: Workflow, folder: BatchFolder
) -> Backend:
    from flowrun.batch.queued import QueueBackend

    return QueueBackend(concurrency, None if queue == "embedded" else queue, workers, wf, folder)


def _backend(
    name: str,
    concurrency: int,
    processes: int | None,
    address: str | None,
    ray_cpus: float,
    ship: bool | None,
    folder: BatchFolder,
    wf: Workflow,
    options: RunOptions,
) -> Backend:
    if name == "ray":
        from flowrun.batch.ray_backend import RayBackend

        return RayBackend(concurrency, address, ray_cpus, ship, folder, portable_overrides(wf))
    if processes is not None and processes > 1:
        from flowrun.batch.processes import ProcessBackend

        return ProcessBackend(concurrency, processes, wf, folder, calls=not options.dry_run)
    from flowrun.batch.local import LocalBackend

    return LocalBackend(concurrency, wf)
