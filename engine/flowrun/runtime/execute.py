"""Start to end of a run: prepare the folder, seed the workspace, run the entry agent or the
steps, and always leave a consistent run folder behind (status, usage, events)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from flowrun._version import __version__
from flowrun.errors import BudgetExceeded, FlowrunError, UsageError
from flowrun.events import (
    BudgetExceededEvent,
    ErrorEvent,
    RunEndEvent,
    RunResumedEvent,
    RunStartEvent,
    SandboxUnavailableEvent,
    SeedKeptEvent,
)
from flowrun.manifest.templates import render
from flowrun.open_files import allow_open_files
from flowrun.runtime.durable.decisions import PendingDecision, waiting_message
from flowrun.runtime.durable.run_folder import unwritable
from flowrun.runtime.durable.runs_index import note_run
from flowrun.runtime.kinds import run_steps
from flowrun.runtime.loop.contracts import Outcome
from flowrun.runtime.loop.decisions import RunWaiting
from flowrun.runtime.loop.prompt_version import RecordedPrompts
from flowrun.runtime.loop.structured import write_json_output
from flowrun.runtime.memory.reflect import reflect
from flowrun.runtime.memory.service import memory_of
from flowrun.runtime.run import Run
from flowrun.runtime.seeding import SeedPlan, check_places, plan_seeds, write_seeds
from flowrun.runtime.steps.base import StepContext, top_agent
from flowrun.settle import settle
from flowrun.states import exit_code


@dataclass
class RunSummary:
    status: str
    message: str
    output: str | None
    exit_code: int
    pending: list[PendingDecision] = field(default_factory=list)  # what a waiting run waits for


def default_task(run: Run) -> str:
    lines = [f"{k}: {v}" for k, v in run.inputs.items()]
    if run.spec.output:
        lines.append(f"Write the final result to {run.spec.output}.")
    return "\n".join(lines) or "Begin."


def seed_plan(run: Run, resume: bool) -> SeedPlan | None:
    """A new run checks the places its workflow names and renders its seeds before it writes
    anything (a path of the wrong type is a UsageError and the folder is as it was); None for
    a resumed run (its seeds were written)."""
    if resume:
        return None
    check_places(run)
    return plan_seeds(run)


def prepare(run: Run, plan: SeedPlan | None) -> list[SeedKeptEvent]:
    """Ready the folder (the caller holds its lock) once `seed_plan` checked it: run.json first,
    so a folder stopped from here on is known as flowrun's, to be resumed or used again. The
    seeds the user's folder already had come back, to be reported once the log has its first
    event."""
    resume = plan is None  # (the folder exists: the lock's holder made it)
    log = run.run_dir / "events.jsonl"
    if resume:
        drop_torn_line(log)
    else:
        _write_meta(run, "running")
        log.unlink(missing_ok=True)  # what a stop before the first event left (at most a torn line)
        run.files.replace("usage.json", json.dumps(run.usage.to_dict(), indent=2))
    if run.workspace == run.run_real:
        (run.run_dir / "workspace").mkdir(exist_ok=True)  # the agents' free space in their own run folder
    else:
        try:
            run.workspace.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(
                f"cannot make the agents' folder {run.workspace}: {e.strerror or e}", "check the path"
            ) from None
    run.files.open()
    return write_seeds(run, plan) if plan is not None else []


def drop_torn_line(path: Path) -> None:
    """A crash can leave half a line at the end of the log: it is cut off, so the log stays
    strictly one JSON object per line."""
    if not path.exists() or not path.stat().st_size:
        return
    with path.open("rb+") as f:
        f.seek(-1, 2)
        if f.read(1) == b"\n":
            return
        size = f.seek(0, 2)
        keep = 0
        while size > 0:  # find the last newline, reading backwards in blocks
            start = max(0, size - 65536)
            f.seek(start)
            block = f.read(size - start)
            at = block.rfind(b"\n")
            if at >= 0:
                keep = start + at + 1
                break
            size = start
        f.truncate(keep)


def sdk_versions() -> dict[str, str]:
    """The SDK versions a run records, read without importing the SDKs (a dry run never loads
    them) and without a package-metadata scan (tens of ms)."""
    return {name: _package_version(name) for name in ("anthropic", "openai")}


@cache  # once per process: a batch or an API caller runs many times
def _package_version(name: str) -> str:
    module = sys.modules.get(name)
    if module is not None:
        return str(getattr(module, "__version__", "unknown"))
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return "missing"
    version_file = Path(next(iter(spec.submodule_search_locations))) / "_version.py"
    try:
        found = re.search(r"__version__\s*=\s*[\"']([^\"']+)", version_file.read_text(encoding="utf-8"))
    except OSError:
        return "unknown"
    return found.group(1) if found else "unknown"


def _emit_start(run: Run, resume: bool) -> None:
    """The events a run (or a resume of it) starts with."""
    if resume:
        calls = len(run.ledger.responses) if run.ledger else 0
        run.emit(RunResumedEvent(recorded_model_calls=calls, options=run.options.to_dict()))
    run.emit(
        RunStartEvent(
            workflow=run.spec.name,
            workflow_file=str(run.workflow_file),
            inputs=run.inputs,
            flowrun_version=__version__,
            sdk_versions=sdk_versions(),
            options=run.options.to_dict(),
            output=run.spec.output,
            chat=_chat_agent(run),
            date=run.template_vars()["date"],
            run_id=run.template_vars()["run_id"],
            prompts=run.recorded(RecordedPrompts).version,
        )
    )
    if run.sandbox_warning is not None:
        reason, mode = run.sandbox_warning
        run.emit(SandboxUnavailableEvent(reason=reason, mode=mode, unconfined=mode == "auto"))


async def _ready_folder(run: Run, resume: bool) -> list[SeedKeptEvent]:
    """prepare() on the loop (a thread hop costs more CPU than its few file operations), in a
    worker thread when seeding copies files (their size is the user's: settle.py)."""
    try:
        plan = seed_plan(run, resume)
        if plan is not None and (plan.copies or plan.kept):
            return await settle(lambda: prepare(run, plan))
        return prepare(run, plan)
    except (asyncio.CancelledError, FlowrunError):  # a path of the wrong type: one line, nothing ran
        run.files.close()
        raise
    except OSError as e:  # nothing recorded yet: the folder is as it was
        raise unwritable(run.run_dir, e) from None


async def execute_run(run: Run, resume: bool = False) -> RunSummary:
    allow_open_files()  # (many runs at once: five descriptors or more each)
    kept = await _ready_folder(run, resume)
    _emit_start(run, resume)
    for event in kept:  # the user's files the seeds left alone, said once the run has started
        run.emit(event)
    if resume:  # a new run's run.json and usage.json were written by prepare()
        _resumed_files(run)
    status, message = "failed", ""
    try:
        await _noted(run)
        await _memory_start(run)
        outcome = await _run_body(run, resume)
        status = "max_steps" if outcome.status == "max_steps" else "completed"
        message = outcome.text
    except RunWaiting:  # a decision only a person can take is pending; nothing is in flight
        status = "waiting"
        message = run.redactor.text(waiting_message(run.run_dir, run.decisions.open_requests()))
    except BudgetExceeded as e:
        status, message = "budget_exceeded", str(e)
        run.emit(BudgetExceededEvent(limit=e.limit, message=e.message))
    except FlowrunError as e:
        status, message = "failed", str(e)
        run.emit(ErrorEvent(where="run", message=str(e)))
    except OSError as e:  # the run folder cannot be written (disk full, removed, read-only)
        status, message = "failed", f"cannot write the run folder {run.run_dir}: {e.strerror or e}"
        with contextlib.suppress(OSError):
            run.emit(ErrorEvent(where="run", message=message))
    except (KeyboardInterrupt, asyncio.CancelledError) as e:
        # Ctrl-C, SIGTERM or a cancelled task: stop cleanly, keep everything, say how to continue
        reason = e.args[0] if e.args and isinstance(e.args[0], str) else type(e).__name__
        status, message = "cancelled", f"{reason}: continue with `flowrun resume {run.run_dir}`"
        raise
    finally:
        await _session_end(run, status)
        await close_run(run)
        _finish(run, status, message)
        await _noted_end(run)
    output = None
    if run.spec.output and (run.workspace / run.spec.output).exists():
        output = str(run.workspace / run.spec.output)
    pending = run.decisions.open_requests() if status == "waiting" else []
    return RunSummary(status, message, output, exit_code(status), pending)


async def _memory_start(run: Run) -> None:
    """The state of each memory the run's agents declare, recorded once the log is open (an event
    each, and run.json's `memory`)."""
    memory = memory_of(run)
    await memory.start()
    if memory.states:
        _write_meta(run, "running")


async def _session_end(run: Run, status: str) -> None:
    """The run's SessionEnd hooks, once it ended (not while it waits or was cancelled: it goes
    on later); they cannot change how it ended."""
    if run.hook_moments is None or status in ("waiting", "cancelled"):
        return
    try:
        await run.hook_moments.session_end(status)
    except FlowrunError as e:
        with contextlib.suppress(OSError):
            run.emit(ErrorEvent(where="hooks", message=str(e)))


async def close_run(run: Run) -> None:
    """Stop the run's tool processes and close its clients. Once the run's outcome is known,
    an interrupt (a late Ctrl-C or SIGTERM, a cancel) no longer cuts this short: the close
    finishes and the run's end is recorded with the status it reached."""
    closing = asyncio.ensure_future(run.aclose())
    task = asyncio.current_task()
    while True:
        try:
            await asyncio.shield(closing)
            return
        except asyncio.CancelledError:
            if closing.cancelled() or task is None:
                return
            task.uncancel()  # absorbed: the status was decided before it came
        except Exception as e:  # closing must not hide the run's outcome
            with contextlib.suppress(OSError):
                run.emit(ErrorEvent(where="close", message=f"{type(e).__name__}: {e}"))
            return


def _finish(run: Run, status: str, message: str) -> None:
    """The run's last event, usage.json and run.json; each is attempted even when the one
    before failed (a full disk), so whatever can be recorded is. The event is emitted here (its
    subscribers live on the loop); nothing here awaits, so a late cancel (a second Ctrl-C)
    cannot cut the recording of an outcome already reached."""
    # the requests still open (a completed run asks nothing more)
    pending = [p.ref for p in run.decisions.open_requests()] if status != "completed" else []
    with contextlib.suppress(OSError):
        usage = run.usage.to_dict()
        run.emit(RunEndEvent(status=status, message=message[:2000], usage=usage, pending=pending))
    _end_files(run, status)


async def _noted(run: Run) -> None:
    """The runs index's row brought up to date after run.json changed (runs_index.note_run, which
    makes the index when the runs folder has none): in a worker thread, as SQLite's commit waits
    for the disk (and up to NOTE_TIMEOUT_S for another writer)."""
    await asyncio.to_thread(note_run, run.run_dir)


async def _noted_end(run: Run) -> None:
    """After the end files: the index's row, and a cancel asked for while the run recorded its
    end (an `on_event` callback, another item reaching a batch's budget) taken back: the
    outcome was reached before it, and the caller gets the result run.json records. A pending
    cancel is delivered at the next await, so one is made to receive it."""
    task = asyncio.current_task()
    try:
        await _noted(run)
        if task is not None and task.cancelling():
            await asyncio.sleep(0)
    except asyncio.CancelledError:
        if task is not None:
            task.uncancel()


def _end_files(run: Run, status: str) -> None:
    steps: tuple[Callable[[], object], ...] = (
        lambda: run.files.replace("usage.json", json.dumps(run.usage.to_dict(), indent=2)),
        lambda: _write_meta(run, status),
    )
    for step in steps:
        with contextlib.suppress(OSError):
            step()
    with contextlib.suppress(OSError):  # the last flush of a log that cannot be written
        run.files.close()


def _resumed_files(run: Run) -> None:
    """A resumed run is running again; every engine file exists before a tool runs."""
    _write_meta(run, "running")
    if not (run.run_dir / "usage.json").exists():
        run.files.replace("usage.json", json.dumps(run.usage.to_dict(), indent=2))


def _write_meta(run: Run, status: str) -> None:
    meta: dict[str, object] = {
        "run_id": run.run_id,
        "workflow": run.spec.name,
        "workflow_file": str(run.workflow_file),
        "inputs": run.inputs,
        "status": status,
        "options": run.options.to_dict(),  # read back by RunOptions.from_record
        "chat": _chat_agent(run),
        "output": run.spec.output,
        "updated": time.time(),
    }
    memories = memory_of(run).run_record()
    if memories:  # each memory's state when the run started (runtime/memory/)
        meta["memory"] = memories
    if status == "waiting":  # what it waits for (durable/decisions.py), as the log says it
        meta["pending"] = [run.redactor.value(p.to_dict()) for p in run.decisions.open_requests()]
    run.files.replace("run.json", json.dumps(meta, indent=2, default=str))


def _chat_agent(run: Run) -> str | None:
    talk = run.hooks.conversation
    return talk.agent if talk is not None and talk.chat else None


async def _run_body(run: Run, resume: bool) -> Outcome:
    if run.hook_moments is not None:
        await run.hook_moments.session_start(resume)
    spec = run.spec
    talk = run.hooks.conversation
    if talk is not None and talk.chat:
        # a chat: the user's first message is the task (the recorded one on resume)
        task = (run.ledger.tasks.get(talk.agent) if run.ledger else None) or await talk.read(None)
        if not task:
            return Outcome("completed", "", 0)
        return await top_agent(run, talk.agent, talk.agent, task, None)
    if spec.entry:
        task = (
            render(spec.task, run.template_vars(), what="the workflow task")
            if spec.task
            else default_task(run)
        )
        outcome = await top_agent(run, spec.entry, spec.entry, task, None)
    else:
        ctx = StepContext(run, lambda steps, prefix: run_steps(steps, prefix, ctx), lambda: default_task(run))
        outcome = await run_steps(spec.steps or [], "", ctx)
    await reflect(run)  # agents whose memory reflects on the run update it (runtime/memory/reflect.py)
    if run.ledger is not None:
        run.ledger.check_complete()  # a replay that left recorded calls unused diverged
    write_json_output(run.workspace, spec.output, outcome)
    return outcome
