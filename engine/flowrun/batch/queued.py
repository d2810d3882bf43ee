"""The queue backend (`--queue embedded|URL`): each item is a job of a queue (queue/store.py),
queued under its run folder's absolute path and executed by `flowrun worker` processes, those
`--workers N` starts here or any that reach the queue and see the batch folder. This process
keeps at most `concurrency` items in the queue at once, follows their jobs to the end, reads
each result from its run folder (results.jsonl as with any backend), and counts each item's
costs as its log records them, so the batch's `max_cost_usd` holds over every worker. A stop
(Ctrl-C, SIGTERM, the budget) cancels the items in the queue: queued ones at once, running ones
by their workers, recorded `cancelled` (resumable)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from flowrun.api import Workflow, read_result
from flowrun.batch.folder import WORKERS_LOG, BatchFolder, ItemResult
from flowrun.batch.jobs import Job, item_result, relative_run_dir, stopped
from flowrun.batch.runner import Tally
from flowrun.errors import FlowrunError, UsageError
from flowrun.queue.databases import open_database, shown
from flowrun.queue.local_workers import LocalWorkers
from flowrun.queue.store import Outcome, Store

POLL_S = 0.1  # how often the batch looks at its items' jobs and logs
STOP_WAIT_S = 60.0  # a stop waits this long for the workers to stop the running items
DRAIN_S = 30.0  # the local workers' drain as the batch ends (they hold no item by then)
T = TypeVar("T")


@dataclass(slots=True)
class Followed:
    """An item in the queue: its job, where its log was read to, whether a worker took it."""

    job: Job
    offset: int  # bytes of its events.jsonl counted (a resumed run's earlier ones: the plan's)
    running: bool = False


class QueueBackend:
    def __init__(
        self, concurrency: int, queue: str | None, workers: int, workflow: Workflow, folder: BatchFolder
    ) -> None:
        self.concurrency = concurrency
        self.queue = queue  # None: the embedded queue of the batch's runs folder
        self.workers = workers  # local `flowrun worker` processes started for the batch
        self.workflow = workflow
        self.folder = folder
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="flowrun-batch-queue")  # one connection
        self._store: Store | None = None

    async def _call(self, function: Callable[..., T], *args: object) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, function, *args)

    async def run(self, jobs: list[Job], tally: Tally) -> None:
        self._store = await self._call(self._open)
        local = self._start_workers()
        try:
            await self._follow(jobs, tally)
        finally:
            if local is not None:
                await asyncio.to_thread(local.stop, DRAIN_S)
            await self._call(self._store.db.close)
            self._thread.shutdown(wait=False)

    def _open(self) -> Store:
        try:
            return Store(open_database(self.queue, self.folder.runs.resolve())).prepare()
        except UsageError:
            raise
        except Exception as e:  # psycopg's errors (a host not reached, a login refused), SQLite's
            said = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            hint = "check --queue (and that the database is up); the batch folder is kept"
            raise UsageError(f"cannot open the queue {shown(self.queue)}: {said}", hint) from None

    def _start_workers(self) -> LocalWorkers | None:
        """`--workers N`: N `flowrun worker` processes on the batch's queue, each a share of the
        concurrency, their lines in the batch folder's workers.log."""
        if not self.workers:
            return None
        share = -(-self.concurrency // self.workers)
        argv = [str(self.workflow.path.resolve()), "--runs-dir", str(self.folder.runs.resolve())]
        argv += ["--queue", self.queue or "embedded", "--concurrency", str(share)]
        with (self.folder.root / WORKERS_LOG).open("a", encoding="utf-8") as log:
            return LocalWorkers(argv, self.workers, stderr=log, with_parent=True)

    async def _follow(self, jobs: list[Job], tally: Tally) -> None:
        """Queue the items as slots free, until every one ended or the batch stops."""
        waiting, live = deque(jobs), dict[str, Followed]()
        try:
            while (waiting or live) and not tally.stop.is_set():
                while waiting and len(live) < self.concurrency:
                    job = waiting.popleft()
                    live[job.run_dir] = await self._enqueue(job)
                await self._look(live, tally)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(tally.stop.wait(), POLL_S)
        finally:
            if live:
                await self._stop(live, tally)

    async def _enqueue(self, job: Job) -> Followed:
        """The item's job in the queue (one queued or running already, a batch killed before it
        ended, is followed as it is)."""
        assert self._store is not None
        options = job.options.to_dict()
        request = {"options": options} if job.resume else {"inputs": job.inputs, "options": options}
        action = "resume" if job.resume else "start"
        await self._call(self._store.enqueue, job.run_dir, self.workflow.name, action, request)
        log = Path(job.run_dir) / "events.jsonl"
        return Followed(job, log.stat().st_size if job.resume and log.is_file() else 0)

    async def _look(self, live: dict[str, Followed], tally: Tally) -> None:
        """Report what changed: items a worker took, their costs, the ended ones."""
        assert self._store is not None
        found = await self._call(self._store.outcomes, list(live))
        for key, item in list(live.items()):
            outcome = found.get(key, Outcome("done"))
            if outcome.state == "running" and not item.running:
                item.running = True
                tally.starting(item.job)
            _count_costs(item, tally)
            if outcome.state == "done":
                del live[key]
                tally.ended(_result(item.job, outcome))

    async def _stop(self, live: dict[str, Followed], tally: Tally) -> None:
        """Cancel the items in the queue and wait for their ends (a job a draining worker
        handed back meanwhile is cancelled in its turn); those not ended in STOP_WAIT_S are
        left to their workers, flagged, and reported as stopped."""
        assert self._store is not None
        deadline = time.monotonic() + STOP_WAIT_S
        while live and time.monotonic() < deadline:
            for key in list(live):
                await self._call(self._store.cancel, key)
            await self._look(live, tally)
            if live:
                await asyncio.sleep(POLL_S)
        for item in live.values():
            tally.ended(stopped(item.job))


def _count_costs(item: Followed, tally: Tally) -> None:
    """The model costs the item's log recorded since the last look (whole lines only; not the
    recorded answers a resumed run uses again)."""
    try:
        with (Path(item.job.run_dir) / "events.jsonl").open("rb") as log:
            log.seek(item.offset)
            text = log.read()
    except OSError:
        return
    whole = text[: text.rfind(b"\n") + 1]
    item.offset += len(whole)
    for line in whole.splitlines():
        if b'"model_response"' not in line:
            continue
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if event.get("type") == "model_response" and event.get("cost_usd") and not event.get("replayed"):
                tally.spent(item.job.item_id, float(event["cost_usd"]))


def _result(job: Job, outcome: Outcome) -> ItemResult:
    """The ended item's result, read from its run folder; a stopped one's as any backend's."""
    if outcome.status == "cancelled":
        return stopped(job)
    try:
        result = read_result(job.run_dir)
    except FlowrunError:  # its worker could not begin the run (a missing key, a bad input)
        return ItemResult(
            id=job.item_id,
            line=job.line,
            status="failed",
            run_dir=relative_run_dir(job),
            error="its worker could not start the run: see the worker's log",
        )
    return item_result(job, result, outcome.run_s)
