"""Start to end of a run: prepare the folder, seed the workspace, run the entry agent or the
steps, and always leave a consistent run folder behind (status, usage, events)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flowrun._version import __version__
from flowrun.errors import BudgetExceeded, FlowrunError, ManifestError
from flowrun.manifest.crossref import is_loop
from flowrun.manifest.templates import evaluate, render
from flowrun.runtime.agent import Outcome, run_agent
from flowrun.runtime.events import EventLog
from flowrun.runtime.run import Run

EXIT_CODES = {"completed": 0, "failed": 1, "max_steps": 3, "budget_exceeded": 4, "interrupted": 130}


@dataclass
class RunSummary:
    status: str
    message: str
    output: str | None
    exit_code: int


def default_task(run: Run) -> str:
    lines = [f"{k}: {v}" for k, v in run.inputs.items()]
    if run.spec.output:
        lines.append(f"Write the final result to {run.spec.output}.")
    return "\n".join(lines) or "Begin."


def prepare(run: Run, resume: bool = False) -> None:
    run.run_dir.mkdir(parents=True, exist_ok=True)
    (run.run_dir / "workspace").mkdir(exist_ok=True)
    log = run.run_dir / "events.jsonl"
    if resume:
        _end_torn_line(log)
    run.events = EventLog(log, run.redactor)
    run.events.subscribers.extend(run.subscribers)
    if not resume:
        seed_workspace(run)


def _end_torn_line(path: Path) -> None:
    """A crash can leave half a line; end it so the next event starts on its own line."""
    if path.exists() and path.stat().st_size:
        with path.open("rb+") as f:
            f.seek(-1, 2)
            if f.read(1) != b"\n":
                f.write(b"\n")


def seed_workspace(run: Run) -> None:
    ws = run.spec.workspace
    variables = run.template_vars()
    for rel, content in ((ws.files if ws else None) or {}).items():
        target = run.workspace / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(content, variables, what=f"seed file {rel}"), encoding="utf-8")
    for rel in (ws.copy if ws else None) or []:
        source = run.workflow_dir / rel
        if not source.exists():
            raise ManifestError(f"workspace.copy: '{rel}' not found next to the workflow", "check the path")
        target = run.workspace / source.name
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copy2(source, target)


def _sdk_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("anthropic", "openai"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "missing"
    return out


async def execute_run(run: Run, resume: bool = False) -> RunSummary:
    prepare(run, resume)
    if resume:
        run.emit("run_resumed", recorded_model_calls=len(run.ledger.responses) if run.ledger else 0)
    run.emit(
        "run_start",
        workflow=run.spec.name,
        workflow_file=str(run.workflow.source.path.resolve()),
        inputs=run.inputs,
        flowrun_version=__version__,
        sdk_versions=_sdk_versions(),
        dry_run=run.options.dry_run,
        model_override=run.options.model_override,
        output=run.spec.output,
    )
    _write_meta(run, "running")
    status, message = "failed", ""
    try:
        outcome = await _run_body(run)
        status = "max_steps" if outcome.status == "max_steps" else "completed"
        message = outcome.text
    except BudgetExceeded as e:
        status, message = "budget_exceeded", str(e)
        run.emit("budget_exceeded", limit=e.limit, message=e.message)
    except FlowrunError as e:
        status, message = "failed", str(e)
        run.emit("error", where="run", message=str(e))
    except (KeyboardInterrupt, asyncio.CancelledError) as e:
        # Ctrl-C: stop cleanly, keep everything, and say how to continue
        status, message = "interrupted", f"{type(e).__name__}: continue with `flowrun resume {run.run_dir}`"
        raise
    finally:
        await _close(run)
        _finish(run, status, message)
    output = None
    if run.spec.output and (run.workspace / run.spec.output).exists():
        output = str(run.workspace / run.spec.output)
    return RunSummary(status, message, output, EXIT_CODES.get(status, 1))


def _finish(run: Run, status: str, message: str) -> None:
    run.emit("run_end", status=status, message=message[:2000], usage=run.usage.to_dict())
    write_atomic(run.run_dir / "usage.json", json.dumps(run.usage.to_dict(), indent=2))
    _write_meta(run, status)
    if run.events:
        run.events.close()


async def _close(run: Run) -> None:
    from flowrun.tools.shell import close_jobs

    await close_jobs(run.tool_state)
    for provider in run.providers.values():
        await provider.aclose()


def _write_meta(run: Run, status: str) -> None:
    meta: dict[str, Any] = {
        "run_id": run.run_id,
        "workflow": run.spec.name,
        "workflow_file": str(run.workflow.source.path.resolve()),
        "inputs": run.inputs,
        "status": status,
        "dry_run": run.options.dry_run,
        "model_override": run.options.model_override,
        "output": run.spec.output,
        "updated": time.time(),
    }
    write_atomic(run.run_dir / "run.json", json.dumps(meta, indent=2, default=str))


def write_atomic(path: Path, text: str) -> None:
    """A crash never leaves a half-written run.json or usage.json behind."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


async def _run_body(run: Run) -> Outcome:
    spec = run.spec
    if spec.entry:
        task = (
            render(spec.task, run.template_vars(), what="the workflow task")
            if spec.task
            else default_task(run)
        )
        return await _top_agent(run, spec.entry, spec.entry, task, None)
    return await _run_steps(run, spec.steps, "")


async def _top_agent(run: Run, name: str, instance_id: str, task: str, workdir: str | None) -> Outcome:
    cwd = None
    if workdir:
        cwd = (run.workspace / workdir).resolve()
        if not cwd.is_relative_to(run.workspace):
            raise ManifestError(
                f"workdir '{workdir}' leaves the workspace", "use a relative path without '..'"
            )
        cwd.mkdir(parents=True, exist_ok=True)
    inst = run.new_instance(name, instance_id, depth=0, cwd=cwd)
    run.emit("agent_start", agent=name, agent_id=inst.id, parent=None, task=task, model=inst.model.name)
    outcome = await run_agent(run, inst, task)
    run.emit("agent_end", agent=name, agent_id=inst.id, status=outcome.status, steps=outcome.steps)
    return outcome


async def _run_steps(run: Run, steps: list[Any], prefix: str) -> Outcome:
    last = Outcome("completed", "", 0)
    for index, step in enumerate(steps):
        if not is_loop(step):
            variables = run.template_vars()
            task = render(step.task, variables, what="a step task") if step.task else default_task(run)
            workdir = render(step.workdir, variables, what="a step workdir").strip() if step.workdir else None
            last = await _top_agent(run, step.agent, f"{prefix}{step.agent}#{index}", task, workdir)
        else:
            last = await _run_loop(run, step, f"{prefix}loop{index}")
    return last


async def _run_loop(run: Run, step: Any, prefix: str) -> Outcome:
    body = step.loop
    last = Outcome("completed", "", 0)
    outer = run.iteration
    try:
        for iteration in range(1, body.max_iterations + 1):
            run.iteration = iteration
            run.emit("iteration_start", loop=prefix, iteration=iteration)
            last = await _run_steps(run, body.steps, f"{prefix}.{iteration}/")
            recorded = run.ledger.until.get((prefix, iteration)) if run.ledger else None
            done = recorded if recorded is not None else _until_met(run, body.until, prefix, iteration)
            run.emit("iteration_end", loop=prefix, iteration=iteration, until_met=done)
            if done:
                break
    finally:
        run.iteration = outer
    return last


def _until_met(run: Run, condition: str | None, loop: str, iteration: int) -> bool:
    """A loop's `until`: a condition that cannot be evaluated yet (its file is missing, a key is
    absent) is not met; the reason goes to the event log so a typo does not go unseen."""
    if not condition:
        return False
    try:
        return evaluate(condition, run.template_vars())
    except ManifestError as e:
        run.emit("until_error", loop=loop, iteration=iteration, message=e.message)
        return False
