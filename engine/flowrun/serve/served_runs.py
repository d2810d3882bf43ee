"""The runs of `flowrun serve http`: started, resumed and cancelled as tasks on the server's
event loop (many at once share it: its model clients and the workflows' rate limits), each in
its own folder under the runs folder, nobody at a terminal (an `approve: ask` call or a
question makes the run wait for a decision taken through the API). The folders are the state:
a run the server did not start, or started before a restart, is found there and resumed the
same way."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import threading
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import TypedDict, TypeVar

from flowrun.api import RunResult, Workflow, new_run_id, read_result, resume
from flowrun.errors import FlowrunError, RunError, RunInUse, UsageError
from flowrun.events import Event
from flowrun.paths import is_dir
from flowrun.queue.store import WorkerRow
from flowrun.runtime.decide import pending_decisions, respond
from flowrun.runtime.durable.decisions import Decision, PendingDecision
from flowrun.runtime.durable.run_folder import check_run_id
from flowrun.runtime.durable.runs_index import RunEntry, RunList, list_runs, owned, read_run
from flowrun.runtime.options import RunOptions, unknown_option
from flowrun.runtime.summary.folder import RunSummary, SummaryCache
from flowrun.serve.eval_folders import variant_runs
from flowrun.serve.workflow_info import batch_runs
from flowrun.states import BY_NAME

# the run options a client may set (RunOptions fields; not workdir: a folder of the server's)
CLIENT_OPTIONS = (
    "model",
    "agent_models",
    "dry_run",
    "stream",
    "sandbox",
    "yes",
    "no_thinking",
    "limits",
    "overrides",
    "decisions",
    "decide_within",
)


class Conflict(RunError):
    """What the run's state does not allow now (HTTP 409)."""


class NotFound(RunError):
    """No such run or workflow (HTTP 404)."""


class Changes:
    """Wakes the readers of a run's log when the server's own run writes an event (others
    are polled: a run resumed by another process writes where the server cannot hear)."""

    def __init__(self) -> None:
        self._next: dict[str, asyncio.Future[None]] = {}
        self.loop = asyncio.get_running_loop()
        self.thread = threading.get_ident()

    def notify(self, run_id: str) -> None:
        """From any thread (a tool's worker thread emits events too); on the loop's own thread
        at once (call_soon_threadsafe wakes the loop through its self-pipe: a write per event)."""
        if threading.get_ident() == self.thread:
            self._wake(run_id)
        else:
            self.loop.call_soon_threadsafe(self._wake, run_id)

    def call(self, callback: Callable[[], object]) -> None:
        """`callback()` on the loop: at once on its thread, else soon (from a worker thread)."""
        if threading.get_ident() == self.thread:
            callback()
        else:
            self.loop.call_soon_threadsafe(callback)

    def _wake(self, run_id: str) -> None:
        future = self._next.pop(run_id, None)
        if future is not None and not future.done():
            future.set_result(None)

    def waited(self) -> list[str]:
        """The runs whose next event someone waits for (a watch of logs written elsewhere
        wakes them: serve/queued_runs.py)."""
        return [run_id for run_id, future in self._next.items() if not future.done()]

    async def wait(self, run_id: str, within: float) -> None:
        """Until the run's next event, or `within` seconds."""
        future = self._next.get(run_id)
        if future is None or future.done():
            future = self._next[run_id] = self.loop.create_future()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(future), within)


class ServedRuns:
    """The runs folder and the workflows of a server, and the runs going on in it."""

    start_state = "running"  # what a run started or resumed is at once (queued: a queue's)

    def __init__(self, workflows: list[Workflow], runs_dir: Path, options: RunOptions | None = None) -> None:
        self.workflows = {wf.name: wf for wf in workflows}
        self.runs_dir = runs_dir
        self.options = options or RunOptions()  # the server's own flags, under each request's
        self.tasks: dict[str, asyncio.Task[RunResult]] = {}
        self.changes = Changes()
        self.summaries = SummaryCache()

    # ------------------------------------------------------------ finding runs

    def folder(self, run_id: str) -> Path:
        """The folder of a run id; NotFound when it is not a run of this runs folder (or of a
        batch beside it: `BATCH:ITEM`)."""
        folder = self.place(run_id)
        if folder is None or not ((folder / "events.jsonl").is_file() or (folder / "run.json").is_file()):
            raise NotFound(f"no run {run_id!r} in {self.runs_dir}", "GET /v1/runs lists them")
        return folder

    def place(self, run_id: str) -> Path | None:
        """Where a run id's folder is (whether or not it exists): RUN_ID under the runs folder,
        `BATCH:ITEM` a batch item's run (batches/BATCH/runs/ITEM, beside the runs folder) and
        `EVAL:VARIANT:RUN` an eval variant's (evals/EVAL/VARIANT/runs/RUN) when no run of the
        runs folder has that id. None for an id that names no folder."""
        try:
            check_run_id(run_id)
        except UsageError:
            return None
        folder = self.runs_dir / run_id
        batch, colon, item = run_id.partition(":")
        if colon and item.count(":") == 1 and not folder.exists():  # EVAL:VARIANT:RUN
            variant, _, run = item.partition(":")
            runs = variant_runs(self.runs_dir, batch, variant)
            return runs / run if runs is not None and run not in ("", ".", "..") else None
        if colon and not folder.exists():
            try:
                check_run_id(batch)
                check_run_id(item)
            except UsageError:
                return None
            return batch_runs(self.runs_dir, batch) / item
        return folder

    def entry(self, run_id: str) -> RunEntry:
        found = read_run(self.folder(run_id))
        if found is None:
            raise NotFound(f"no run {run_id!r}", "GET /v1/runs lists them")
        return found

    def summary(self, run_id: str) -> RunSummary:
        """The run's summary, its log read from where it was last read (a live page asks often)."""
        return self.summaries.read(self.folder(run_id))

    def running(self, run_id: str) -> bool:
        """A process (this server's or another) holds the run's folder: the lock, not the task,
        so that a run whose status says it stopped is no longer running (its task releases the
        lock last)."""
        folder = self.place(run_id)
        return folder is not None and owned(folder)

    def listing(self) -> Callable[..., RunList]:
        """The runs list, with `list_runs`'s filters: the runs folder's index."""
        return functools.partial(list_runs, self.runs_dir)

    def worker_rows(self) -> list[WorkerRow]:
        """The queue's workers (none: this server runs its runs itself)."""
        return []

    def left_over(self) -> tuple[list[RunEntry], list[RunEntry]]:
        """The runs waiting for decisions and those stopped (cancelled as a server stopped,
        or interrupted: killed with it, crashed): resumable through the API."""
        if not is_dir(self.runs_dir):
            return [], []
        found = list_runs(self.runs_dir, status=["waiting", "cancelled", "interrupted"]).runs
        return [e for e in found if e.status == "waiting"], [e for e in found if e.status != "waiting"]

    # ------------------------------------------------------------ starting and stopping

    def workflow(self, name: object) -> Workflow:
        """The served workflow `name`; a request that names none gets the only one served (as
        over A2A), else NotFound saying which there are."""
        known = ", ".join(sorted(self.workflows))
        if name is None:
            if len(self.workflows) == 1:
                return next(iter(self.workflows.values()))
            raise NotFound("the request names no workflow", f'give "workflow": one of {known}')
        if not isinstance(name, str) or name not in self.workflows:
            raise NotFound(f"no workflow {name!r} is served here", f"the workflows: {known}")
        return self.workflows[name]

    def run_options(self, given: object) -> RunOptions:
        """The server's options with the request's over them (only those a client may set)."""
        if given is None:
            given = {}
        if not isinstance(given, Mapping):
            raise UsageError("options must be an object of run options", 'e.g. {"dry_run": true}')
        for name in given:
            if name not in CLIENT_OPTIONS:
                if name in ("workdir", "verbosity"):
                    raise UsageError(f"the option {name!r} is the server's", "start the server with it")
                raise unknown_option(str(name), CLIENT_OPTIONS)
        try:
            return self.options.changed(**{str(k): v for k, v in given.items()})
        except TypeError as e:
            raise UsageError(f"bad options: {e}", "see GET /openapi.json") from None

    async def start(self, name: object, inputs: object, options: object) -> str:
        """Start a run of a served workflow; its id once its first event is written (a mistake
        in the inputs or options, a missing key: a FlowrunError, no folder made)."""
        workflow = self.workflow(name)
        if inputs is not None and not isinstance(inputs, Mapping):
            raise UsageError("inputs must be an object", '{"inputs": {"question": "..."}}')
        opts = self.run_options(options)
        run_id = new_run_id(workflow.name, self.runs_dir)
        await self._launch(
            run_id,
            lambda on_event: workflow.run(
                dict(inputs or {}), opts, runs_dir=self.runs_dir, run_id=run_id, on_event=on_event
            ),
        )
        return run_id

    async def resume(self, run_id: str) -> None:
        """Continue a stopped or waiting run in the background (from its log: no model call
        is made again); Conflict when it is running or done."""
        folder = self.folder(run_id)
        if self.running(run_id):
            raise Conflict(f"run {run_id} is running", "wait for it to end, or cancel it")
        entry = self.entry(run_id)
        if entry.status == "completed":
            raise Conflict(f"run {run_id} completed; there is nothing to resume", "start a new run")
        await self._launch(run_id, lambda on_event: resume(folder, on_event=on_event))

    async def _launch(
        self, run_id: str, run: Callable[[Callable[[Event], None]], Coroutine[object, object, RunResult]]
    ) -> None:
        """`run(on_event)` as the run's task, kept; back once its first event is written."""
        started = asyncio.Event()

        def on_event(event: Event) -> None:
            self.changes.notify(run_id)
            if not started.is_set():
                self.changes.call(started.set)

        task = asyncio.create_task(run(on_event))
        self._keep(run_id, task)
        await _first(task, started)

    def stop(self, run_id: str) -> asyncio.Task[RunResult]:
        """Cancel the task of a run of this server (it ends `cancelled`, resumable); the task,
        done once the stop is recorded. Conflict when the server is not running it."""
        self.folder(run_id)
        task = self.tasks.get(run_id)
        if task is None or task.done():
            if self.running(run_id):
                raise Conflict(
                    f"run {run_id} is run by another process", "stop that process (it is resumable)"
                )
            raise Conflict(f"run {run_id} is not running", "GET /v1/runs/ID says how it stands")
        task.cancel("cancelled through the HTTP API")
        return task

    async def cancel(self, run_id: str) -> RunResult:
        """Stop a run of this server (`stop`); its partial result once the stop is recorded (its
        tools' processes stopped, its end written): what each agent had said, usage and cost so
        far."""
        task = self.stop(run_id)
        await asyncio.wait([task])  # (not the task itself: this request is not the run's to cancel)
        return await asyncio.to_thread(read_result, self.folder(run_id))

    async def decide(
        self, run_id: str, body: Mapping[str, object]
    ) -> tuple[Decision, list[PendingDecision], str]:
        """Take one decision the run waits for (recorded `by` its `via`: http, or ui from the
        web UI's pages); once none is pending and
        `continue` (default), resume it in the background. (the decision, what is still
        pending, the run's status)"""
        folder = self.folder(run_id)
        if self.running(run_id):
            raise Conflict(f"run {run_id} is running", "decide once it waits (its status says waiting)")
        fields = _decision_fields(body)
        by = str(body.get("via") or "http")
        try:
            decision = await asyncio.to_thread(lambda: respond(folder, by=by, **fields))
        except RunInUse as e:
            raise Conflict(e.message, e.hint) from None
        pending = await asyncio.to_thread(pending_decisions, folder)
        status = "waiting"
        if not pending and body.get("continue", True) is not False:
            with contextlib.suppress(Conflict):
                await self.resume(run_id)
            status = self.start_state
        return decision, pending, status

    async def close(self) -> None:
        """Stop every run of this server (each ends `cancelled`, resumable)."""
        tasks = [task for task in self.tasks.values() if not task.done()]
        for task in tasks:
            task.cancel("the server stopped")
        await asyncio.gather(*tasks, return_exceptions=True)

    def _keep(self, run_id: str, task: asyncio.Task[RunResult]) -> None:
        self.tasks[run_id] = task

        def done(finished: asyncio.Task[RunResult]) -> None:
            if self.tasks.get(run_id) is finished:
                del self.tasks[run_id]  # a long-lived server keeps no finished run
            self.changes.notify(run_id)
            if not finished.cancelled():
                finished.exception()  # retrieved: a failure is in the run's folder, not the loop's log

        task.add_done_callback(done)


async def _first(task: asyncio.Task[RunResult], started: asyncio.Event) -> None:
    """Until the run wrote its first event (or ended before: its error is raised here)."""
    waiter = asyncio.create_task(started.wait())
    try:
        await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if task.done() and not task.cancelled() and not started.is_set():
        error = task.exception()
        if error is not None:
            raise error


T = TypeVar("T")


VIA = ("http", "ui", "a2a")  # how a decision reached the server, recorded as its `by`


class DecisionFields(TypedDict, total=False):
    """`respond`'s keyword arguments, from a decision's JSON body."""

    call_id: str
    allow: bool
    answer: str
    grant: float
    reason: str
    user: str


def _decision_fields(body: Mapping[str, object]) -> DecisionFields:
    known = {"call", "allow", "answer", "grant", "reason", "continue", "user", "via"}
    for name in body:
        if name not in known:
            raise UsageError(f"unknown field {name!r} in a decision", "fields: " + ", ".join(sorted(known)))
    fields = DecisionFields()
    if (call := body.get("call")) is not None:
        fields["call_id"] = _typed("call", call, str)
    if (answer := body.get("answer")) is not None:
        fields["answer"] = _typed("answer", answer, str)
    if (reason := body.get("reason")) is not None:
        fields["reason"] = _typed("reason", reason, str)
    via = body.get("via")
    if via is not None and via not in VIA:
        raise UsageError(f"via must be one of {', '.join(VIA)}, not {via!r}", "how the decision was taken")
    if (user := body.get("user")) is not None:
        fields["user"] = _typed("user", user, str)
    if (allow := body.get("allow")) is not None:
        fields["allow"] = _typed("allow", allow, bool)
    if (grant := body.get("grant")) is not None:
        if isinstance(grant, bool) or not isinstance(grant, int | float):
            raise UsageError(f"grant must be a number, not {grant!r}", "how much more of the limit")
        fields["grant"] = float(grant)
    return fields


def _typed(name: str, value: object, kind: type[T]) -> T:
    if not isinstance(value, kind):
        raise UsageError(
            f"{name} must be a {kind.__name__}, not {value!r}", "see POST /v1/runs/{id}/decisions"
        )
    return value


def decision_dict(decision: Decision) -> dict[str, object]:
    return {**dataclasses.asdict(decision), "ref": decision.ref}


def result_dict(result: RunResult) -> dict[str, object]:
    """A run's result as the API answers a cancel: its state, message, usage and cost, what
    each agent had said, and whether `resume` continues it."""
    state = BY_NAME.get(result.status)
    return {
        "id": result.run_id,
        "status": result.status,
        "message": result.message or None,
        "total_tokens": result.usage.get("total_tokens", 0),
        "cost_usd": result.usage.get("total_cost_usd"),
        "usage": result.usage,
        "agents": [dataclasses.asdict(answer) for answer in result.agents],
        "pending": [p.to_dict() for p in result.pending],
        "resumable": state is not None and state.resumable,
    }


def describe_error(e: FlowrunError) -> dict[str, object]:
    return {"error": e.message, "hint": e.hint or None}
