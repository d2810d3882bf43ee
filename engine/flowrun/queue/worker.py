"""A worker (`flowrun worker`): takes runs from the queue and executes them, several at once on
its event loop (`concurrency`), each through the API as `flowrun run` and `flowrun resume` do:
a start job is a new run in the folder the API made for it, anything else (a job taken over
from a lost worker, a resume) continues the run from its folder, so no model answer it recorded
is asked for again.

- A lease per run, renewed by a heartbeat thread (queue/heartbeat.py) that never waits for the
  run: a run may wait minutes on one model call. A worker that dies stops renewing; once the
  lease runs out another worker takes the job and resumes the run. The run folder's lock is
  held by the process running it: a worker whose claim finds the folder still held (the old
  worker alive but cut off from the queue) hands the job back to be tried again; the cut-off
  worker takes it back at its next beat (queue/heartbeat.py), and stops the run only when another
  worker holds it for a whole lease (runs it: the folder's lock was lost too), so one process
  at a time runs a folder.
- A cancel asked through the queue stops the run (it ends `cancelled`, resumable).
- SIGTERM or SIGINT drains: no new run is taken, the running ones get `drain_s` to end, then
  they are stopped (each records `cancelled`) and handed back to the queue, to be resumed by
  the next worker. A second signal stops them at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from flowrun.api import Workflow, resume
from flowrun.atomic_files import replace_file
from flowrun.batch.jobs import resumable
from flowrun.errors import FlowrunError, RunInUse
from flowrun.pinned import read_json_object
from flowrun.providers.clients import prefetch_done
from flowrun.queue.heartbeat import Heartbeat
from flowrun.queue.runs_table import row_of
from flowrun.queue.store import RETRY_S, Job, Limits, Store
from flowrun.runtime.durable.run_folder import run_began
from flowrun.runtime.models import rate_limits
from flowrun.runtime.options import RunOptions

Note = Callable[[str], None]


@dataclass
class WorkerConfig:
    concurrency: int = 32  # runs at once in this worker
    lease_s: float = 30.0  # a lease runs out this long after its last renewal
    drain_s: float = 30.0  # on SIGTERM, how long running runs have to end before they are handed back
    limits: Limits = field(default_factory=Limits)


@dataclass
class Held:
    job: Job
    task: asyncio.Task[str]
    why: str | None = None  # why it was stopped: cancel (asked), drain (handed back), lost (lease)
    told: asyncio.Task[None] | None = None  # the queue told how it ended


class Worker:
    def __init__(
        self, store: Store, runs_dir: Path, workflows: list[Workflow], config: WorkerConfig, note: Note
    ) -> None:
        self.store = store
        self.runs_dir = runs_dir.resolve()
        self.workflows = {wf.name: wf for wf in workflows}
        self.config = config
        self.note = note
        self.held: dict[str, Held] = {}  # by lease
        self.id = ""
        self.draining = asyncio.Event()
        self.state = "up"
        self.lease_s = config.lease_s

    async def serve(self) -> None:
        """Take and run jobs until SIGTERM or SIGINT, then drain."""
        from flowrun.queue.rate_book import QueueBook

        loop = asyncio.get_running_loop()
        names = sorted(self.workflows)
        config = self.config
        # warm before the first claim: an SDK's import (a second or more of CPU, the GIL held)
        # would stall the runs taken meanwhile, and a worker that says it takes runs is ready
        await asyncio.to_thread(prefetch_done)
        self.id = await asyncio.to_thread(self.store.register, config.concurrency, config.lease_s, names)
        rate_limits.use_book(QueueBook(self.store))  # the models' rate limits hold over all workers
        for number in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(number, self._signalled)
        beat = Heartbeat(self, loop)
        beat.start()
        self.note(
            f"worker {self.id} takes runs of {', '.join(names)} (up to {self.config.concurrency} at once)"
        )
        try:
            await self._take(names)
            await self._drain()
        finally:
            beat.stop()
            await asyncio.to_thread(self.store.stopped, self.id)
            self.note(f"worker {self.id} stopped")

    def _signalled(self) -> None:
        if self.draining.is_set():  # the second signal: stop the runs now
            for held in list(self.held.values()):
                self._stop(held, "drain")
            return
        self.state = "draining"
        self.draining.set()

    async def _take(self, names: list[str]) -> None:
        """Claim jobs while slots are free; see cancels asked; wait for news."""
        db = self.store.db
        while not self.draining.is_set():
            free = self.config.concurrency - len(self.held)
            look = await asyncio.to_thread(self.store.look, self.id, names, bool(self.held))
            for lease in look.cancels:
                if (held := self.held.get(lease)) is not None:
                    self._stop(held, "cancel")
            if look.waiting and free > 0:
                claimed = await asyncio.to_thread(
                    self.store.claim, self.id, names, free, self.config.lease_s, self.config.limits
                )
                for job in claimed:
                    self._begin(job)
                if claimed:
                    continue
            # no news comes when a lease runs out (a worker died): look again just after it
            wait = db.poll_s if look.next_expiry_s is None else min(db.poll_s, look.next_expiry_s + 0.01)
            if db.poll_s < 0.1:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.draining.wait(), wait)
            else:
                await asyncio.to_thread(db.wait, max(0.0, wait))

    def _begin(self, job: Job) -> None:
        task = asyncio.create_task(self._execute(job), name=f"run {job.run_id}")
        held = self.held[job.lease] = Held(job, task)
        self.note(f"worker {self.id} took {job.run_id} ({job.action}, attempt {job.attempts})")
        held.told = asyncio.create_task(self._ended(held))

    def _stop(self, held: Held, why: str) -> None:
        if held.why is None:
            held.why = why
            held.task.cancel(
                {"cancel": "cancelled through the queue", "drain": "the worker stopped"}.get(
                    why, "its worker lost the run's lease"
                )
            )

    def folder_of(self, job: Job) -> Path:
        """The job's run folder: a run of the runs folder by its id, a batch's item by its path."""
        return Path(job.run_id) if batch_item(job) else self.runs_dir / job.run_id

    def runs(self) -> dict[str, str]:
        """The runs held, by lease (the heartbeat's thread reads it: a copy)."""
        return {lease: held.job.run_id for lease, held in list(self.held.items())}

    def lost(self, lease: str) -> None:
        """The heartbeat found the lease gone (another worker took the job): stop the run."""
        if (held := self.held.get(lease)) is not None:
            self._stop(held, "lost")

    def cancel_asked(self, lease: str) -> None:
        if (held := self.held.get(lease)) is not None:
            self._stop(held, "cancel")

    async def _execute(self, job: Job) -> str:
        """Run the job; the status it ended in (`retry`: its folder is held by another process)."""
        folder = self.folder_of(job)
        workflow = self.workflows[job.workflow]
        request: Mapping[str, object] = job.request
        given = request.get("options")
        options = RunOptions.from_dict(given if isinstance(given, Mapping) else {}, strict=False)
        try:
            # a start handed back before its run began (a drain) is still a start
            if (job.action == "start" or "inputs" in request) and not run_began(folder):
                inputs = request.get("inputs")
                inputs = dict(inputs) if isinstance(inputs, Mapping) else {}
                result = await workflow.run(inputs, options, run_dir=folder)
            elif "options" in request:  # a batch's item: resumed with the batch's options
                result = await resume(folder, **resumable(options))
            else:
                result = await resume(folder)
        except RunInUse:
            return "retry"
        except FlowrunError as e:  # it could not begin (a missing key, a bad input): failed
            await asyncio.to_thread(_failed_before_start, folder, str(e))
            self.note(f"worker {self.id}: run {job.run_id} failed: {e}")
            return "failed"
        return result.status

    async def _ended(self, held: Held) -> None:
        """Tell the queue how the job ended: done, handed back (drain, folder held), or nothing
        (a lost lease: the job is another worker's now)."""
        job, task = held.job, held.task
        await asyncio.wait([task])
        status = "cancelled"
        if not task.cancelled():
            error = task.exception()
            status = task.result() if error is None else "failed"
            if error is not None:
                self.note(f"worker {self.id}: run {job.run_id} failed: {type(error).__name__}: {error}")
        try:
            if held.why == "lost":
                self.note(f"worker {self.id} lost {job.run_id} to another worker")
            elif status == "retry":
                await asyncio.to_thread(self.store.hand_back, job.lease, RETRY_S)
            elif held.why == "drain" and status == "cancelled":
                await asyncio.to_thread(self.store.hand_back, job.lease)
                self.note(f"worker {self.id} handed {job.run_id} back")
            else:
                await asyncio.to_thread(self._finish, job, status)
                self.note(f"worker {self.id} ended {job.run_id}: {status}")
        finally:
            self.held.pop(job.lease, None)

    def _finish(self, job: Job, status: str) -> None:
        """The job done, with its run's row of the runs list (a batch's item has none)."""
        self.store.finish(job.lease, status, None if batch_item(job) else row_of(self.folder_of(job)))

    async def _drain(self) -> None:
        """The runs going on get `drain_s` to end, then are stopped and handed back."""
        tasks = [held.task for held in self.held.values()]
        if tasks:
            self.note(f"worker {self.id} drains: {len(tasks)} run(s) going on")
            await asyncio.wait(tasks, timeout=self.config.drain_s)
        told = [held.told for held in self.held.values() if held.told is not None]
        for held in list(self.held.values()):
            self._stop(held, "drain")
        await asyncio.gather(*told, return_exceptions=True)  # their ends recorded and told


def batch_item(job: Job) -> bool:
    """A batch's item is queued under its run folder's absolute path (batch/queued.py): its
    folder is the batch's, and the runs list (the API's runs) does not hold it."""
    return Path(job.run_id).is_absolute()


def _failed_before_start(folder: Path, message: str) -> None:
    """A queued run that could not begin: its run.json says failed, and why."""
    meta = read_json_object(folder / "run.json")
    if meta.get("status") == "queued":
        meta = {**meta, "status": "failed", "message": message}
        replace_file(folder / "run.json", json.dumps(meta, indent=2, default=str))
