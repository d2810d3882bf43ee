"""The runs of `flowrun serve http --workers N` or `--queue URL`: a run started, resumed or
cancelled through the API goes to the queue (queue/), and workers execute it; this instance
keeps no run on its own loop, so any number of instances serve the same runs. A run's state is
the queue's while it holds the run (`queued`, `running`), else what its folder records; the
runs list is the queue's (queue/runs_table.py: one list for every instance). Events are read
from the run folders (a shared mount): a watch looks at the logs and queue states of the runs
being followed every WATCH_S and wakes their readers."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
from collections.abc import Callable
from pathlib import Path

from flowrun.api import RunResult, Workflow, read_result
from flowrun.errors import UsageError
from flowrun.queue.local_workers import LocalWorkers
from flowrun.queue.runs_table import adopt, list_queued_runs
from flowrun.queue.store import WorkerRow
from flowrun.queue.submit import Queue
from flowrun.runtime.durable.runs_index import RunEntry, RunList
from flowrun.runtime.options import RunOptions
from flowrun.runtime.summary.folder import RunSummary
from flowrun.serve.served_runs import Conflict, ServedRuns

WATCH_S = 0.02  # how often the logs and states of the runs being followed are looked at
LIVE = ("queued", "running")


class QueuedRuns(ServedRuns):
    start_state = "queued"

    def __init__(
        self,
        workflows: list[Workflow],
        runs_dir: Path,
        options: RunOptions | None,
        queue: Queue,
        workers: LocalWorkers | None = None,
        drain_s: float = 30.0,
    ) -> None:
        super().__init__(workflows, runs_dir, options)
        self.queue = queue
        self.workers = workers
        self.drain_s = drain_s
        self.live: dict[str, str] = {}  # the queue's state of the runs being followed
        self.sizes: dict[str, int] = {}
        self._watch = asyncio.create_task(self._watching())

    # ------------------------------------------------------------ states

    def queue_state(self, run_id: str) -> str | None:
        """`queued`, `running` or `done` as the queue says, None when it never held the run."""
        return self.queue.store.states([run_id]).get(run_id)

    def running(self, run_id: str) -> bool:
        """Held by the queue (waiting for a worker, or run by one): the followed runs' state
        from the watch, the others' asked."""
        state = self.live.get(run_id) or self.queue_state(run_id) or "none"
        return state in LIVE or (state == "none" and super().running(run_id))

    def _adjusted(self, entry: RunEntry) -> RunEntry:
        state = self.queue_state(entry.id)
        if state in LIVE and entry.status != state:
            return dataclasses.replace(entry, status=str(state))
        return entry

    def entry(self, run_id: str) -> RunEntry:
        return self._adjusted(super().entry(run_id))

    def summary(self, run_id: str) -> RunSummary:
        found = super().summary(run_id)
        entry = self._adjusted(found.entry)
        return found if entry is found.entry else dataclasses.replace(found, entry=entry)

    def listing(self) -> Callable[..., RunList]:
        """The runs list, with `list_runs`'s filters: the queue's table (one for every instance)."""
        return functools.partial(list_queued_runs, self.queue.store, self.runs_dir)

    def worker_rows(self) -> list[WorkerRow]:
        return self.queue.store.workers()

    # ------------------------------------------------------------ starting and stopping

    async def start(self, name: object, inputs: object, options: object) -> str:
        """Queue a run of a served workflow; its id (a mistake in the inputs or options: a
        FlowrunError, nothing made)."""
        workflow = self.workflow(name)
        if inputs is not None and not isinstance(inputs, dict):
            raise UsageError("inputs must be an object", '{"inputs": {"question": "..."}}')
        opts = self.run_options(options)
        run_id = await asyncio.to_thread(self.queue.submit, workflow, inputs, opts)
        self.changes.notify(run_id)
        return run_id

    async def resume(self, run_id: str) -> None:
        """Queue a stopped or waiting run to be continued by a worker; Conflict when the queue
        holds it already or it completed."""
        self.folder(run_id)
        entry = await asyncio.to_thread(self.entry, run_id)
        if entry.status in LIVE:
            raise Conflict(f"run {run_id} is {entry.status}", "wait for it to end, or cancel it")
        if entry.status == "completed":
            raise Conflict(f"run {run_id} completed; there is nothing to resume", "start a new run")
        if not await asyncio.to_thread(self.queue.resume, run_id, entry.workflow):
            raise Conflict(f"run {run_id} is in the queue already", "GET /v1/runs/ID says how it stands")
        self.changes.notify(run_id)

    async def cancel(self, run_id: str) -> RunResult:
        """Stop a run the queue holds: at once when it is queued, else by its worker; its
        partial result once the stop is recorded (the worker let the job go)."""
        folder = self.folder(run_id)
        found = await asyncio.to_thread(self.queue.cancel, run_id)
        if found is None:
            raise Conflict(f"run {run_id} is not running", "GET /v1/runs/ID says how it stands")
        self.changes.notify(run_id)
        while found == "taken":
            await asyncio.sleep(WATCH_S)
            state = (await asyncio.to_thread(self.queue.store.states, [run_id])).get(run_id)
            if state == "queued":  # its worker was lost meanwhile: cancelled in the queue instead
                found = await asyncio.to_thread(self.queue.cancel, run_id)
            elif state != "running":
                break
        return await asyncio.to_thread(read_result, folder)

    async def close(self) -> None:
        self._watch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._watch
        if self.workers is not None:
            await asyncio.to_thread(self.workers.stop, self.drain_s)
        self.queue.close()

    # ------------------------------------------------------------ the watch

    async def _watching(self) -> None:
        """Wake the readers of a followed run when its log grew or its queue state changed."""
        while True:
            await asyncio.sleep(WATCH_S)
            followed = self.changes.waited()
            if not followed:
                continue
            states = await asyncio.to_thread(self.queue.store.states, followed)
            for run_id in followed:
                size = _size(self.runs_dir / run_id / "events.jsonl")
                state = states.get(run_id, "none")  # none: a run the queue never held
                if size != self.sizes.get(run_id) or state != self.live.get(run_id):
                    self.sizes[run_id], self.live[run_id] = size, state
                    self.changes.notify(run_id)
            for gone in set(self.live) - set(followed):
                self.live.pop(gone, None)
                self.sizes.pop(gone, None)


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1


def adopt_folder(queue: Queue) -> int:
    """The runs folder's runs made before the queue, added to its runs list."""
    return adopt(queue.store, queue.runs_dir)
