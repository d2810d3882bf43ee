"""Many inputs through one workflow: `flowrun batch WORKFLOW.yaml ITEMS` and `flowrun.run_batch`.

    import flowrun

    summary = await flowrun.run_batch("examples/research.yaml", "questions.jsonl", concurrency=20)
    print(summary.status, summary.completed, summary.failed, summary.cost_usd, summary.results)

Each item of ITEMS (JSONL or CSV, batch/items.py) runs in its own run folder of the batch folder
(batch/folder.py); the local backend runs them as tasks of one event loop (batch/local.py), or of
several worker processes' loops (`processes`, batch/processes.py), the Ray backend as Ray tasks
(batch/ray_backend.py). Running the same batch again skips completed
items, resumes interrupted ones and, with `retry_failed`, resumes failed ones."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from flowrun.api import Workflow, load
from flowrun.batch.folder import BatchFolder, ItemResult
from flowrun.batch.items import Item, read_items
from flowrun.batch.jobs import ItemOptions, portable_overrides
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
from flowrun.tools.sandbox import Mode

__all__ = ["BatchProgress", "BatchSummary", "Item", "ItemResult", "default_folder", "read_items", "run_batch"]

BACKENDS = ("local", "ray")
PROCESSES_HINT = (
    "give a whole number of processes (1 runs every item in this process) or auto "
    "(the default: one per 16 of --concurrency, at most one per CPU)"
)


async def run_batch(
    workflow: str | Path | Workflow,
    items: str | Path,
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
    model: str | dict[str, str] | None = None,
    dry_run: bool = False,
    stream: bool | None = None,
    sandbox: Mode | None = None,
    yes: bool = False,
    on_progress: OnProgress | None = None,
) -> BatchSummary:
    """Run `workflow` once per item of `items` into the batch folder `out` (default:
    batches/<workflow>-<items file name>); see the module docstring. A user's mistake (a bad item,
    an option out of range, a batch folder of another workflow) raises UsageError before anything
    runs; an item that fails is that item's result. `processes` (local backend): worker
    processes to spread the items over, or "auto" (None: the default, one per 16 of
    `concurrency`, at most one per CPU; 1 runs every item in this process)."""
    wf = workflow if isinstance(workflow, Workflow) else load(workflow)
    items_path = Path(items)
    _check_options(concurrency, max_cost_usd_per_item, max_cost_usd, backend, ray_cpus)
    workers = _processes(processes, backend, concurrency)
    options = ItemOptions(model, dry_run, stream, sandbox, yes, max_cost_usd_per_item)
    if max_cost_usd is not None or max_cost_usd_per_item is not None:
        check_prices(wf, options)
    listed = read_items(items_path, wf.spec.inputs, wf.name)
    folder = BatchFolder(Path(out) if out is not None else default_folder(wf, items_path))
    given = None if backend == "ray" else ("auto" if processes in (None, "auto") else workers)
    record = options_record(
        options,
        concurrency=concurrency,
        max_cost_usd=max_cost_usd,
        backend=backend,
        processes=given,
        overrides=[o.text for o in wf.overrides],
    )
    folder.open(wf.path, items_path, record)
    runner = _backend(backend, concurrency, workers, address, ray_cpus, ship_runs, folder, wf)
    status = "interrupted"
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
        folder.write_meta(wf.path, items_path, record, status)
    summary.processes = workers
    return summary


def default_folder(wf: Workflow, items: Path) -> Path:
    return Path("batches") / f"{wf.name}-{items.stem}"


def _check_options(
    concurrency: int, per_item: float | None, total: float | None, backend: str, ray_cpus: float
) -> None:
    if concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1, got {concurrency}")
    for name, value in (("--max-cost-usd-per-item", per_item), ("--max-cost-usd", total)):
        if value is not None and value <= 0:
            raise UsageError(f"{name} must be more than 0, got {value}")
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r}", "use local or ray")
    if ray_cpus <= 0:
        raise UsageError(f"--ray-cpus must be more than 0, got {ray_cpus}")


def _processes(value: object, backend: str, concurrency: int) -> int | None:
    """How many processes the local backend runs items in (None for the Ray backend)."""
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


def _backend(
    name: str,
    concurrency: int,
    processes: int | None,
    address: str | None,
    ray_cpus: float,
    ship: bool | None,
    folder: BatchFolder,
    wf: Workflow,
) -> Backend:
    if name == "ray":
        from flowrun.batch.ray_backend import RayBackend

        return RayBackend(concurrency, address, ray_cpus, ship, folder, portable_overrides(wf))
    if processes is not None and processes > 1:
        from flowrun.batch.processes import ProcessBackend

        return ProcessBackend(concurrency, processes, wf, folder)
    from flowrun.batch.local import LocalBackend

    return LocalBackend(concurrency, wf)
