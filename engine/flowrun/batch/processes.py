"""The local backend over several processes (`--processes N`): one event loop is bound by one
core (the GIL), so a big batch on a machine with cores to spare runs its items in worker
processes (batch/worker.py), each running its share of `concurrency` exactly as batch/local.py
does in one process. This process hands out the jobs and keeps the batch whole:

- it gives a worker the next job when one of its slots frees (shares differ by at most one, so
  no more than `concurrency` items run at once), reports to the tally as items start, spend and
  end, and answers every worker's rate-limit reservations from one book, so the batch as a
  whole stays under each model's `rate_limit`;
- the batch's budget spent, or this task cancelled (Ctrl-C, SIGTERM): every worker is told to
  stop; their running items end `cancelled` (resumable) and are reported; a worker that does
  not end within GRACE_S is killed;
- a worker that dies (a kill, out of memory, a crash): its running items end `interrupted`,
  naming how it ended, and a new worker takes its place while jobs remain; when workers keep
  dying without finishing an item, the batch stops with the reason. A worker that cannot load
  the workflow stops the batch with the loader's message.

The workers are started before the batch reads and plans its items (`ProcessBackend.start`, as
soon as the workflow is loaded); a batch that then stops before running (a bad item, a batch
folder of another workflow) closes them again. They are forked from this process once it has
imported the workflow's SDKs, when that is safe (batch/forked.py: no other thread, Linux), else
started as `python -m flowrun.batch.worker`, whose start-up (Python, flowrun, the workflow, its
SDKs) then overlaps the plan (not multiprocessing: its spawn start imports a user's `__main__`
again). What they write on stderr goes to `workers.log` in the batch folder."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import signal
import site
import sys
import sysconfig
from collections import deque
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from flowrun.api import Workflow
from flowrun.batch import protocol
from flowrun.batch.folder import WORKERS_LOG, BatchFolder, ItemResult
from flowrun.batch.forked import ForkedProcess, Forker, fork_possible, warm
from flowrun.batch.jobs import Job, portable_overrides, stopped
from flowrun.batch.runner import Tally
from flowrun.errors import FlowrunError, RunError, UsageError
from flowrun.runtime.models.rate_limits import LocalBook

ITEMS_PER_PROCESS = 16  # `auto`: one process per this many items of concurrency, up to the cores
SMALL_MACHINE = 4  # usable CPUs: up to this many, `auto` beyond ITEMS_PER_PROCESS uses them all
GRACE_S = 10.0  # a stopped worker has this long to report its items and exit before it is killed
DEATHS_PER_WORKER = 2  # workers dying without an item ending, in a row, before the batch gives up
RESUMES = "running the same batch again resumes it"


def auto_processes(concurrency: int) -> int:
    """`--processes auto`: up to ITEMS_PER_PROCESS items at once run in this process; more get
    one process per ITEMS_PER_PROCESS of them, at most one per CPU this process may use, and on
    a small machine (at most SMALL_MACHINE usable CPUs) one per CPU: there the items' own CPU
    (their run folders, the SDK's parsing) fills a core long before the model's latency does."""
    cpus = usable_cpus()
    if concurrency <= ITEMS_PER_PROCESS:
        return 1
    if cpus <= SMALL_MACHINE:
        return cpus
    return max(1, min(cpus, math.ceil(concurrency / ITEMS_PER_PROCESS)))


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: a container's or taskset's limit)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def shares(concurrency: int, processes: int) -> list[int]:
    """Each worker's number of slots: `concurrency` split as evenly as it goes."""
    base, extra = divmod(concurrency, processes)
    return [base + (i < extra) for i in range(processes)]


class WorkerFailed(FlowrunError):
    """A worker process could not start (the workflow no longer loads, or workers keep dying)."""

    def __init__(self, message: str, hint: str | None, exit_code: int = 1) -> None:
        super().__init__(message, hint)
        self.exit_code = exit_code


class ProcessBackend:
    def __init__(
        self, concurrency: int, processes: int, workflow: Workflow, folder: BatchFolder, calls: bool = True
    ) -> None:
        self.concurrency = concurrency
        self.processes = processes
        self.workflow = workflow
        self.calls = calls  # the items call models (not a dry run): the SDKs are imported before forking
        self.forker: Forker | None = None  # workers are forked from this process (batch/forked.py)
        self.python = _python()
        config = {"workflow": str(workflow.path.resolve()), "overrides": portable_overrides(workflow)}
        self.config = json.dumps(config)
        self.folder = folder
        self.log = WorkersLog(folder.root / WORKERS_LOG)
        self.early: list[WorkerProcess] = []  # started before the plan, not yet given a share

    async def start(self) -> None:
        """Start the workers now, before the batch reads and plans its items: forked from this
        process once it has imported what they need, or fresh interpreters (batch/forked.py)."""
        if fork_possible(but_imports=True):
            await warm(self.workflow, imports=self.calls)
            if fork_possible():
                self.forker = Forker(self.workflow)
        for _ in range(min(self.processes, self.concurrency)):
            self.early.append(await spawn_worker(self, 0))

    async def discard(self) -> None:
        """The workers started early that no pool took (fewer jobs than workers, or the batch
        stopped before it ran): their input closed, they exit; waited for, killed if late."""
        early, self.early = self.early, []
        for worker in early:
            worker.close_input()
        try:
            for worker in early:
                await worker.ended()
        except BaseException:  # interrupted meanwhile: none is left behind
            for worker in early:
                worker.kill()
            raise
        finally:
            self.log.close()

    async def run(self, jobs: list[Job], tally: Tally) -> None:
        count = min(self.processes, self.concurrency, len(jobs))
        try:
            if count:
                await Pool(self, jobs, tally, count).run()
        finally:
            await self.discard()


async def spawn_worker(backend: ProcessBackend, share: int) -> WorkerProcess:
    if backend.forker is not None and fork_possible():
        with contextlib.suppress(OSError):  # the system cannot fork now: a fresh interpreter
            return WorkerProcess(await backend.forker.fork(), share, backend.log)
    proc = await asyncio.create_subprocess_exec(
        backend.python,
        "-m",
        "flowrun.batch.worker",
        backend.config,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=_environment(),
        limit=protocol.LINE_LIMIT,
    )
    return WorkerProcess(proc, share, backend.log)


class WorkerProcess:
    """One worker as the parent sees it: its process, pipes, slots and the jobs it runs."""

    def __init__(self, proc: asyncio.subprocess.Process | ForkedProcess, share: int, log: WorkersLog) -> None:
        self.proc = proc
        self.share = share
        self.running: dict[str, Job] = {}
        self.ready = False  # it loaded the workflow
        self.ended_any = False
        self.log = log
        self.last_words = ""  # its last line on stderr
        assert proc.stdout is not None and proc.stderr is not None
        self.stdout = proc.stdout
        self.stderr_task = asyncio.create_task(self._read_stderr(proc.stderr))

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, message: Mapping[str, object]) -> None:
        stdin = self.proc.stdin
        if stdin is not None and not stdin.is_closing():  # a dead worker is found by its stdout
            stdin.write(protocol.encode(message))

    def close_input(self) -> None:
        """End of input: the worker stops its running items, reports them and exits."""
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()

    def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()

    async def next_message(self) -> dict[str, object] | None:
        """The worker's next message; None once its output ended (it exited or is exiting)."""
        while line := await self.stdout.readline():
            message = protocol.decode(line)
            if message is not None:
                return message
            self.log.write(self.pid, f"(not a message) {line[:200]!r}")
        return None

    async def ended(self) -> str:
        """Wait for the process to end; how it ended, in words."""
        try:
            code = await asyncio.wait_for(self.proc.wait(), GRACE_S)
        except TimeoutError:
            self.kill()
            code = await self.proc.wait()
        with contextlib.suppress(TimeoutError):  # a child of the worker may still hold stderr
            await asyncio.wait_for(asyncio.shield(self.stderr_task), 1.0)
        self.stderr_task.cancel()
        return _how(code)

    async def _read_stderr(self, stream: asyncio.StreamReader) -> None:
        with contextlib.suppress(ValueError, ConnectionError):
            while line := await stream.readline():
                text = line.decode("utf-8", "replace").rstrip()
                if text:
                    self.last_words = text[-300:]
                    self.log.write(self.pid, text)


def _how(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with code {code}"


class WorkersLog:
    """workers.log in the batch folder: what workers wrote on stderr, a line each, by pid
    (opened on the first line: most batches never write one)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: TextIO | None = None

    def write(self, pid: int, text: str) -> None:
        try:
            if self._file is None:
                self._file = self.path.open("a", encoding="utf-8")
            self._file.write(f"[worker {pid}] {text}\n")
            self._file.flush()
        except OSError:
            pass  # a full disk loses the workers' chatter, not the batch

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class Pool:
    """One batch's workers, from the first start to the last exit."""

    def __init__(self, backend: ProcessBackend, jobs: list[Job], tally: Tally, count: int) -> None:
        self.backend = backend
        self.queue = deque(jobs)
        self.tally = tally
        self.count = count
        self.book = LocalBook()  # every worker's rate limits, shared
        self.workers: set[WorkerProcess] = set()
        self.halted = False
        self.deaths = 0  # workers that died in a row without an item ending
        self.failure: FlowrunError | None = None
        self.log = backend.log

    async def run(self) -> None:
        drivers = [
            asyncio.create_task(self._drive(share)) for share in shares(self.backend.concurrency, self.count)
        ]
        watcher = asyncio.create_task(self._halt_on_stop())
        try:
            await asyncio.wait(drivers)  # (cancelling this wait leaves the drivers running)
        except BaseException:  # cancelled (Ctrl-C), or a signal's exception (SIGTERM) raised here
            await self._wind_down(drivers)
            raise
        finally:
            watcher.cancel()
            for worker in self.workers:  # only after a second interruption: no one is left behind
                worker.kill()
        for driver in drivers:
            driver.result()  # a bug in the pool is not swallowed
        if self.failure is not None:
            raise self.failure

    async def _wind_down(self, drivers: list[asyncio.Task[None]]) -> None:
        """Interrupted: the workers stop their items and exit; those that do not are killed."""
        self.halt()
        _, late = await asyncio.wait(drivers, timeout=GRACE_S)
        if late:
            for worker in self.workers:
                worker.kill()
            await asyncio.wait(late)

    async def _halt_on_stop(self) -> None:
        await self.tally.stop.wait()
        self.halt()

    @property
    def closing(self) -> bool:
        """No job starts any more: the pool was halted, or the batch's budget was reached (an
        item that ends with it must not hand its slot on before the watcher halts the pool)."""
        return self.halted or self.tally.stop.is_set()

    def halt(self) -> None:
        """No job starts from now on; the running ones stop (resumably) and the workers exit."""
        self.halted = True
        for worker in self.workers:
            if worker.running:
                worker.send({"op": "stop"})
            worker.close_input()

    def _fail(self, failure: FlowrunError) -> None:
        if self.failure is None:
            self.failure = failure
        self.halt()

    # ------------------------------------------------------------ one slot of the pool

    async def _drive(self, share: int) -> None:
        """Keep a worker with `share` slots busy while jobs remain, replacing it when it dies.
        Interrupted here (the loop's tasks cancelled at exit, a signal's exception), it still
        hears its worker out, so the items it ran are recorded, then stops."""
        worker: WorkerProcess | None = None
        try:
            while self.queue and not self.closing:
                worker = await self._spawn(share)
                if await self._ready(worker):
                    self._fill(worker)
                    await self._listen(worker)
                await self._bury(worker)
                worker = None
        except BaseException:
            self.halt()
            if worker is not None:
                await self._drain(worker)
            raise

    async def _spawn(self, share: int) -> WorkerProcess:
        """A worker started before the plan when one is left, else a new one."""
        if self.backend.early:
            worker = self.backend.early.pop(0)
            worker.share = share
        else:
            worker = await spawn_worker(self.backend, share)
        self.workers.add(worker)
        if self.closing:
            worker.close_input()
        return worker

    async def _ready(self, worker: WorkerProcess) -> bool:
        """Whether the worker loaded the workflow; if it could not, the batch stops."""
        message = await worker.next_message()
        if message is not None and message["op"] == "ready":
            worker.ready = True
            return True
        if message is not None and message["op"] == "error":
            self._fail(_load_failure(message))
        return False

    async def _listen(self, worker: WorkerProcess) -> None:
        while (message := await worker.next_message()) is not None:
            self._handle(worker, message)

    async def _drain(self, worker: WorkerProcess) -> None:
        """Hear out a worker told to stop; one that does not end in time is killed."""
        try:
            async with asyncio.timeout(GRACE_S):
                await self._listen(worker)
        except TimeoutError:
            worker.kill()
        await self._bury(worker)

    async def _bury(self, worker: WorkerProcess) -> None:
        """The worker's output ended: wait for its exit; what it still ran ends `interrupted`."""
        if worker not in self.workers:
            return
        how = await worker.ended()
        self.workers.discard(worker)
        lost = list(worker.running.values())
        worker.running.clear()
        said = _said(worker)
        for job in lost:
            error = f"the worker process running it (pid {worker.pid}) {how}{said}; {RESUMES}"
            self.tally.ended(replace(stopped(job), error=error))
        if self.closing or worker.ended_any or not (lost or self.queue or not worker.ready):
            return
        before = "" if worker.ready else " before it was ready"
        self._died(f"a worker process (pid {worker.pid}) {how}{before}{said}")

    def _handle(self, worker: WorkerProcess, message: dict[str, Any]) -> None:
        op = message["op"]
        if op == "ended":
            result: ItemResult = protocol.result_of(message["result"])
            if worker.running.pop(result.id, None) is None:
                return  # not one of its jobs: ignored
            worker.ended_any = True
            self.deaths = 0
            self.tally.ended(result)
            self._fill(worker)
        elif op == "spent":
            self.tally.spent(str(message["item"]), float(message["usd"]))
        elif op == "reserve":
            delay = self.book.reserve(protocol.limit_of(message["limit"]), int(message["tokens"]))
            worker.send({"op": "reserved", "id": message["id"], "delay": delay})
        elif op == "settle":
            limit = protocol.limit_of(message["limit"])
            self.book.settle(limit, int(message["estimated"]), int(message["actual"]))

    def _fill(self, worker: WorkerProcess) -> None:
        """Give the worker jobs up to its share; with none left for it, it may go."""
        while len(worker.running) < worker.share and self.queue and not self.closing:
            job = self.queue.popleft()
            self.tally.starting(job)
            worker.running[job.item_id] = job
            worker.send(protocol.job_message(job))
        if not worker.running:
            worker.close_input()

    def _died(self, what: str) -> None:
        """A worker died before finishing an item: fine once in a while, not again and again."""
        self.deaths += 1
        if self.deaths >= DEATHS_PER_WORKER * self.count:
            self._fail(
                RunError(
                    f"worker processes keep dying ({self.deaths} in a row without an item ending); "
                    f"the last: {what}",
                    f"see {self.log.path} for what they wrote; the batch folder is kept: run the same "
                    "command again to resume it (with --processes 1 to run in this process)",
                )
            )


def _said(worker: WorkerProcess) -> str:
    return f" ({worker.last_words})" if worker.last_words else ""


def _load_failure(message: dict[str, Any]) -> WorkerFailed:
    return WorkerFailed(
        f"a worker process could not load the workflow: {message.get('message')}",
        message.get("hint"),
        int(message.get("exit_code") or 1),
    )


def _python() -> str:
    if not sys.executable:  # an embedded interpreter
        raise UsageError("cannot start worker processes: no Python executable", "use processes=1")
    return sys.executable


def _environment() -> dict[str, str]:
    """This process's environment; workers import the same flowrun as this process, also when
    it was not installed but found on a path this process was given (PYTHONPATH leads the
    search, so an installed flowrun's site-packages is not put there ahead of the stdlib)."""
    env = dict(os.environ)
    source = Path(__file__).resolve().parents[2]  # the folder that holds the flowrun package
    installed = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib"), *site.getsitepackages()}
    if str(source) not in {str(Path(p).resolve()) for p in installed if p}:
        rest = env.get("PYTHONPATH")
        env["PYTHONPATH"] = f"{source}{os.pathsep}{rest}" if rest else str(source)
    return env
