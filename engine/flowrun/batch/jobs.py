"""One item of a batch as a job any backend can run: a new run of the workflow in the item's
run folder, or the resumption of the run already there. Jobs are plain picklable data, so a Ray
worker runs exactly what the local backend runs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from flowrun.api import RunResult, Workflow, load, resume
from flowrun.batch.folder import FINAL, NOT_STARTED, ItemResult
from flowrun.errors import FlowrunError, UsageError
from flowrun.events import Event, ModelResponseEvent
from flowrun.manifest.overrides import parse_override
from flowrun.pinned import read_json_object
from flowrun.runtime.durable.run_folder import run_began
from flowrun.runtime.options import RunChanges, RunOptions
from flowrun.states import recorded_state


@dataclass(frozen=True, slots=True)
class Job:
    item_id: str
    line: int
    inputs: dict[str, object]
    workflow: str  # absolute path of the workflow file
    batch_dir: str  # absolute path of the batch folder
    run_dir: str  # absolute path of the item's run folder
    resume: bool  # continue the run already in run_dir
    options: RunOptions = field(default_factory=RunOptions)  # the batch's, per-item budget in `limits`
    # the workflow's overrides (`--set`), for a process that loads it again (portable_overrides)
    overrides: list[str] | dict[str, object] = field(default_factory=list)


async def run_job(
    job: Job, on_event: Callable[[Event], None] | None = None, workflow: Workflow | None = None
) -> ItemResult:
    """Run (or resume) one item; every way it can end becomes its ItemResult. Cancelling it
    stops the run resumably (status cancelled) and propagates. `workflow`: the batch's loaded
    workflow, when the caller has it (else it is loaded, as a Ray worker does)."""
    started = time.monotonic()
    try:
        if job.resume:  # with the batch's options where a resume may change them
            result = await resume(job.run_dir, on_event=on_event, **resumable(job.options))
        else:
            wf = workflow or load(job.workflow, job.overrides)
            result = await wf.run(job.inputs, job.options, run_dir=job.run_dir, on_event=on_event)
    except FlowrunError as e:
        return _failed(job, started, str(e))
    except (asyncio.CancelledError, KeyboardInterrupt):
        raise
    except Exception as e:  # a bug in one item must not stop the others: it is that item's result
        return _failed(job, started, f"internal error: {type(e).__name__}: {e}")
    return item_result(job, result, time.monotonic() - started)


def cost_listener(item_id: str, spent: Callable[[str, float], None]) -> Callable[[Event], None]:
    """An on_event that reports an item's model costs as they are spent (not the recorded
    answers a resumed run uses again)."""

    def on_event(event: Event) -> None:
        if isinstance(event, ModelResponseEvent) and event.cost_usd and not event.replayed:
            spent(item_id, event.cost_usd)

    return on_event


def portable_overrides(workflow: Workflow) -> list[str] | dict[str, object]:
    """The `overrides` the workflow was loaded with, as another process (a worker process, a Ray
    worker) can load them again: their texts when those read back as the same values (always,
    for `--set`), else the values."""
    texts = [o.text for o in workflow.overrides]
    given = [(o.path, o.value) for o in workflow.overrides]
    with contextlib.suppress(UsageError):  # a text made from a value YAML cannot read back
        if [(o.path, o.value) for o in map(parse_override, texts)] == given:
            return texts
    values = {".".join(o.path): o.value for o in workflow.overrides}
    try:
        if json.loads(json.dumps(values)) == values:
            return values
    except (TypeError, ValueError):
        pass
    raise UsageError(
        "the workflow's overrides cannot be sent to worker processes (values JSON cannot carry)",
        "give them as PATH=VALUE texts to flowrun.load, or run the batch with processes=1",
    )


def resumable(options: RunOptions) -> RunChanges:
    """What a resumed item takes from the batch's options (the rest is what its run recorded)."""
    return {
        "sandbox": options.sandbox,
        "yes": options.yes,
        "stream": options.stream,
        "verbosity": options.verbosity,
        "limits": options.limits,
        "decisions": options.decisions,
        "decide_within": options.decide_within,
    }


def item_result(job: Job, result: RunResult, duration: float) -> ItemResult:
    usage = result.usage or {}
    lines = usage.get("by_agent_model", [])
    input_tokens = sum(int(line.get("usage", {}).get("input_tokens", 0)) for line in lines)
    output_tokens = sum(int(line.get("usage", {}).get("output_tokens", 0)) for line in lines)
    output = os.path.relpath(result.output, job.batch_dir) if result.output else None
    return ItemResult(
        id=job.item_id,
        line=job.line,
        status=result.status,
        run_dir=relative_run_dir(job),
        output=output,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=int(usage.get("total_tokens", input_tokens + output_tokens)),
        cost_usd=usage.get("total_cost_usd"),
        duration_s=round(duration, 3),
        error=None if result.ok else (result.message or result.status).splitlines()[0][:500],
    )


def relative_run_dir(job: Job) -> str:
    """The job's run folder as results.jsonl names it: relative to the batch folder."""
    return os.path.relpath(job.run_dir, job.batch_dir)


def _failed(job: Job, started: float, message: str) -> ItemResult:
    return ItemResult(
        id=job.item_id,
        line=job.line,
        status="failed",
        run_dir=relative_run_dir(job),
        duration_s=round(time.monotonic() - started, 3),
        error=message.splitlines()[0][:500] if message else "failed",
    )


def stopped(job: Job) -> ItemResult:
    """What a job stopped while it ran (Ctrl-C, SIGTERM, the batch's budget, its worker lost)
    comes to, read from its run folder once the stop is over: the run's state (`cancelled` when
    it recorded its stop, `interrupted` when its worker died first; resumable either way) when
    its run began; NOT_STARTED when the stop came first (no run began in the folder, or the
    run being resumed was not touched yet), so nothing is recorded and the item stays as it
    was, to be started (or retried) the next time."""
    if _began(job):
        meta = read_json_object(Path(job.run_dir) / "run.json")
        state = recorded_state(meta.get("status") if isinstance(meta.get("status"), str) else None, None)
        return ItemResult(
            id=job.item_id,
            line=job.line,
            status="cancelled" if state == "cancelled" else "interrupted",
            run_dir=relative_run_dir(job),
            error="stopped while running; running the same batch again resumes it",
        )
    return ItemResult(
        id=job.item_id,
        line=job.line,
        status=NOT_STARTED,
        run_dir=relative_run_dir(job),
        error="stopped before its run began; running the same batch again starts it",
    )


def _began(job: Job) -> bool:
    run_dir = Path(job.run_dir)
    if not job.resume:
        return run_began(run_dir)
    # a resume that began marks run.json `running` before anything else, and its stop
    # `cancelled`: a final status there is the one the run had before this attempt
    return read_json_object(run_dir / "run.json").get("status") not in FINAL
