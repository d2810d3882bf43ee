"""What `flowrun run` does before and after a run: load and check the workflow, read its inputs
from the command line, check credentials, print progress and the summary."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from flowrun.errors import ManifestError, UsageError
from flowrun.manifest.project import Loaded, Project


@dataclass
class LoadedWorkflow:
    project: Project
    workflow: Loaded[Any]


def load_for_run(path: Path) -> LoadedWorkflow:
    from flowrun.manifest.crossref import check_project
    from flowrun.manifest.project import load_project

    project = load_project(path.parent, [path])
    problems = [d for d in project.diagnostics + check_project(project) if d.severity == "error"]
    if problems or not project.workflows:
        lines = "\n".join(d.text() for d in problems[:20]) or f"{path} is not a workflow manifest"
        raise ManifestError(
            f"{len(problems) or 1} problem(s) in the workflow, nothing was run:\n{lines}",
            f"run `flowrun validate {path}` for the full list",
        )
    return LoadedWorkflow(project, project.workflows[0])


def _convert(name: str, raw: str, spec: Any) -> Any:
    kind = spec.type
    try:
        if kind == "integer":
            return int(raw)
        if kind == "number":
            return float(raw)
        if kind == "boolean":
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
    except ValueError:
        raise UsageError(f"--{name} expects {kind}, got {raw!r}") from None
    return raw


def _check_choice(name: str, value: Any, spec: Any) -> Any:
    if spec.choices and value not in spec.choices and str(value) not in map(str, spec.choices):
        raise UsageError(f"--{name} must be one of {', '.join(map(str, spec.choices))}, got {value!r}")
    return value


def parse_inputs(loaded: LoadedWorkflow, args: list[str]) -> dict[str, Any]:
    declared = dict(loaded.workflow.spec.inputs or {})
    options = {name.replace("_", "-"): name for name in declared} | {name: name for name in declared}
    values: dict[str, Any] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--"):
            raise UsageError(f"unexpected argument {arg!r}", "inputs are given as --name value")
        key, eq, inline = arg[2:].partition("=")
        name = options.get(key)
        if name is None:
            known = ", ".join(f"--{n}" for n in declared) or "(none)"
            raise UsageError(
                f"unknown option --{key} for workflow '{loaded.workflow.spec.name}'", f"its inputs: {known}"
            )
        spec = declared[name]
        if eq:
            raw = inline
        elif spec.type == "boolean" and (i + 1 >= len(args) or args[i + 1].startswith("--")):
            raw = "true"
        elif i + 1 < len(args):
            i += 1
            raw = args[i]
        else:
            raise UsageError(f"--{key} needs a value")
        values[name] = _check_choice(key, _convert(key, raw, spec), spec)
        i += 1
    for name, spec in declared.items():
        if name in values:
            continue
        if spec.default is not None:
            values[name] = spec.default
        elif spec.required is not False:
            raise UsageError(f"missing --{name}", spec.description or f"the workflow needs --{name}")
        else:
            values[name] = None  # optional and not given: templates can test `if name`
    return values


def workflow_help(path: Path) -> str:
    loaded = load_for_run(path)
    spec = loaded.workflow.spec
    lines = [f"Workflow '{spec.name}': {(spec.description or '').strip()}", "Inputs:"]
    for name, inp in (spec.inputs or {}).items():
        need = "required" if inp.required is not False and inp.default is None else f"default {inp.default!r}"
        lines.append(f"  --{name} {inp.type.upper():<8} {inp.description or ''} ({need})")
    return "\n".join(lines)


def missing_credentials(loaded: LoadedWorkflow, run: Any) -> dict[str, list[str]]:
    """env var → agents that need it, for every model the run would call that lacks its key."""
    from flowrun.manifest.crossref import reachable_agents, workflow_agents

    project = loaded.project
    starts = [name for name, _ in workflow_agents(loaded.workflow.spec) if name in project.agents]
    missing: dict[str, list[str]] = {}
    for name in sorted(reachable_agents(starts, project)):
        agent = project.agents[name].spec
        for ref in [agent.model, *(agent.selectable_models or [])]:
            if ref is None and agent.model is not None:
                continue
            config = run.model_config(ref, name)
            if config.provider in ("test", "scripted") or config.options.get("key_optional"):
                continue
            if config.secret(config.api_key_env) or config.secret(config.auth_token_env):
                continue
            missing.setdefault(config.api_key_env or "?", []).append(name)
    return missing


def new_run_id(name: str) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{name}-{uuid.uuid4().hex[:4]}"


def start_run(
    loaded: LoadedWorkflow,
    inputs: dict[str, Any],
    *,
    dry_run: bool,
    model_override: str | None,
    runs_dir: Path,
    run_id: str | None,
    verbosity: int,
    stream: bool | None = None,
) -> int:
    from flowrun.runtime.run import Run, RunOptions

    options = RunOptions(
        dry_run=dry_run, model_override=model_override, interactive=sys.stdin.isatty(), stream=stream
    )
    run_dir = runs_dir / (run_id or new_run_id(loaded.workflow.spec.name))
    if run_dir.exists() and any(run_dir.iterdir()):
        raise UsageError(f"run folder {run_dir} already exists", "choose another --run-id")
    run = Run(loaded.project, loaded.workflow, inputs, run_dir, options)
    missing = missing_credentials(loaded, run)
    if missing:
        needs = "; ".join(f"{env} (for {', '.join(sorted(set(agents)))})" for env, agents in missing.items())
        raise ManifestError(
            f"no model provider is configured: set {needs}",
            "export the key, or try it offline with --dry-run, or use a local server: "
            "--model ollama:llama3.1 (or OPENAI_BASE_URL=http://localhost:8000/v1 --model openai:MODEL)",
        )
    summary = _execute(run, verbosity)
    return summary.exit_code


def _execute(run: Any, verbosity: int, resume: bool = False) -> Any:
    """Run with progress and the run log attached; always detach them."""
    from loguru import logger

    from flowrun.runtime.execute import execute_run
    from flowrun.runtime.progress import attach_progress, detach_progress
    from flowrun.runtime.run_log import log_event, setup_run_logging

    # the engine's log goes to the run folder only; the terminal shows progress
    with contextlib.suppress(ValueError):
        logger.remove(0)
    sys.path.insert(0, str(run.workflow_dir))
    run.run_dir.mkdir(parents=True, exist_ok=True)
    remove_log = setup_run_logging(run.run_dir, 1, run.redactor.text)  # the file keeps every event
    run.subscribers.append(log_event)
    attach_progress(run, verbosity)
    try:
        summary = asyncio.run(execute_run(run, resume=resume))
    finally:
        detach_progress(run)
        remove_log()
    _print_summary(run, summary, verbosity)
    return summary


def _print_summary(run: Any, summary: Any, verbosity: int) -> None:
    out = click.get_text_stream("stdout")
    rel = os.path.relpath(run.run_dir)
    if verbosity >= 0:
        click.echo("", file=out)
        click.echo(run.usage.table(), file=out)
    click.echo(f"status: {summary.status}", file=out)
    click.echo(f"run folder: {rel}", file=out)
    if summary.output:
        click.echo(f"output: {os.path.relpath(summary.output)}", file=out)
    elif run.spec.output:
        click.echo(f"output: {run.spec.output} was not written", file=out)
    if summary.status != "completed" and summary.message:
        click.echo(f"error: {summary.message.splitlines()[0][:500]}", err=True)


def _recorded_run(run_dir: Path) -> tuple[dict[str, Any], LoadedWorkflow]:
    import json

    from flowrun.errors import RunError
    from flowrun.runtime.events import read_events

    if not (run_dir / "events.jsonl").is_file():
        raise RunError(f"{run_dir} is not a run folder (no events.jsonl)", "pass a folder under runs/")
    try:
        meta = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        # run.json is missing or damaged: the log's first event says what was started
        start = next((e for e in read_events(run_dir / "events.jsonl") if e.get("type") == "run_start"), None)
        if start is None:
            raise RunError(
                f"{run_dir} has no run_start event", "the run never started; run it again"
            ) from None
        meta = {**start, "status": "incomplete"}
    workflow = Path(meta["workflow_file"]).resolve()
    if not workflow.is_file():
        raise RunError(f"the run's workflow {workflow} no longer exists", "restore it at that path")
    return meta, load_for_run(workflow)


def resume_run(run_dir: Path, verbosity: int) -> int:
    """Continue a run that stopped (crash, kill, Ctrl-C): recorded model responses and tool
    results are used again, then the run goes live where the log ends."""
    from flowrun.runtime.ledger import Ledger
    from flowrun.runtime.run import Run, RunOptions

    meta, loaded = _recorded_run(run_dir)
    if meta.get("status") == "completed":
        click.echo(f"{run_dir} already completed; nothing to resume")
        return 0
    options = RunOptions(
        dry_run=bool(meta.get("dry_run")),
        model_override=meta.get("model_override"),
        interactive=sys.stdin.isatty(),
    )
    run = Run(loaded.project, loaded.workflow, dict(meta.get("inputs") or {}), run_dir, options)
    run.ledger = Ledger.from_events(run_dir / "events.jsonl", "resume")
    return _execute(run, verbosity, resume=True).exit_code


def replay_run(run_dir: Path, into: Path | None, verbosity: int) -> int:
    """Re-run a recorded run into a new folder with no network: model calls come from the log,
    local tools run again to rebuild the files, the output is compared with the original."""
    from flowrun.runtime.ledger import Ledger
    from flowrun.runtime.run import Run, RunOptions

    meta, loaded = _recorded_run(run_dir)
    target = into or run_dir.with_name(run_dir.name + "-replay")
    n = 1
    while into is None and target.exists():
        n += 1
        target = run_dir.with_name(f"{run_dir.name}-replay{n}")
    if target.exists() and any(target.iterdir()):
        raise UsageError(f"{target} already exists", "choose another --into folder")
    options = RunOptions(dry_run=bool(meta.get("dry_run")), model_override=meta.get("model_override"))
    run = Run(loaded.project, loaded.workflow, dict(meta.get("inputs") or {}), target, options)
    run.ledger = Ledger.from_events(run_dir / "events.jsonl", "replay")
    summary = _execute(run, verbosity)
    output = meta.get("output")
    if output and summary.status == meta.get("status"):
        same = (
            (run_dir / output).read_bytes() == (target / output).read_bytes()
            if (target / output).exists()
            else False
        )
        click.echo(f"output {'reproduced' if same else 'DIFFERS from the recording'}: {output}")
        return summary.exit_code if same else 1
    if summary.status != meta.get("status"):
        click.echo(f"replay ended {summary.status}; the recorded run ended {meta.get('status')}", err=True)
        return summary.exit_code or 1
    return summary.exit_code
