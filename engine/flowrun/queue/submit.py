"""Putting runs in a queue, for the runs API (`serve http --workers`, `--queue`) and the Python
API (`flowrun.submit`): a new run is checked as `Workflow.run` checks it before anything is made
(its inputs, its models), then gets its folder at once, whose run.json says `queued` (so every
view lists it, and a worker's `Workflow.run` uses the folder as one stopped before its first
event), its row in the runs list and its job, in one transaction."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path

from flowrun.api import Workflow, new_run_id
from flowrun.atomic_files import replace_file
from flowrun.manifest.inputs import resolve_inputs
from flowrun.pinned import read_json_object
from flowrun.queue.databases import open_database
from flowrun.queue.runs_table import row_of
from flowrun.queue.store import Store
from flowrun.runtime.durable.run_folder import check_run_id, make_folder
from flowrun.runtime.durable.runs_index import queued_row
from flowrun.runtime.options import RunOptions


class Queue:
    """A queue and the runs folder its runs live in (every machine mounts it at one path)."""

    def __init__(self, queue: str | None, runs_dir: str | Path) -> None:
        self.runs_dir = Path(runs_dir).resolve()
        self.store = Store(open_database(queue, self.runs_dir)).prepare()

    def submit(
        self,
        workflow: Workflow,
        inputs: Mapping[str, object] | None = None,
        options: RunOptions | None = None,
        run_id: str | None = None,
    ) -> str:
        """Queue a new run of `workflow`; its id. A mistake in its inputs or models is a
        FlowrunError, and nothing is made."""
        opts = options or RunOptions()
        workflow.with_overrides(opts.overrides).check_models(opts)
        values = resolve_inputs(workflow.spec.inputs, dict(inputs or {}), workflow.name)
        name = check_run_id(run_id) if run_id is not None else new_run_id(workflow.name, self.runs_dir)
        folder = self.runs_dir / name
        make_folder(folder)
        record = {
            "id": name,
            "workflow": workflow.name,
            "workflow_file": str(workflow.path.resolve()),
            "status": "queued",
            "queued": time.time(),
            "inputs": values,
            "options": opts.to_dict(),
        }
        replace_file(folder / "run.json", json.dumps(record, indent=2, default=str))
        request = {"inputs": dict(inputs or {}), "options": opts.to_dict()}
        self.store.enqueue(name, workflow.name, "start", request, queued_row(folder, record))
        return name

    def resume(self, run_id: str, workflow: str) -> bool:
        """Queue a stopped or waiting run to be continued from its folder; False when the queue
        holds it already (queued or running)."""
        return self.store.enqueue(run_id, workflow, "resume", {}, row_of(self.runs_dir / run_id))

    def cancel(self, run_id: str) -> str | None:
        """Stop a run the queue holds: one still queued is cancelled at once (a run that never
        began records `cancelled`), a running one is stopped by its worker. `queued` or `taken`;
        None when the queue holds no such live run."""
        found = self.store.cancel(run_id)
        if found == "queued":
            folder = self.runs_dir / run_id
            meta = read_json_object(folder / "run.json")
            if meta.get("status") == "queued":
                replace_file(folder / "run.json", json.dumps({**meta, "status": "cancelled"}, indent=2))
            self.store.note(row_of(folder))
        return found

    def close(self) -> None:
        self.store.db.close()


def submit(
    workflow: Workflow,
    inputs: Mapping[str, object] | None = None,
    options: RunOptions | None = None,
    *,
    queue: str | None = None,
    runs_dir: str | Path = "runs",
    run_id: str | None = None,
) -> str:
    """Queue a new run of `workflow` for the workers of `queue` (a `postgresql://` URL; None:
    the embedded queue of `runs_dir`) and return its id at once; `flowrun worker` processes
    run it in `runs_dir/ID` (`flowrun.list_runs` and the run folder tell how it stands).
    `inputs` and `options` are `Workflow.run`'s; a mistake in them is raised here."""
    queued = Queue(queue, runs_dir)
    try:
        return queued.submit(workflow, inputs, options, run_id)
    finally:
        queued.close()
