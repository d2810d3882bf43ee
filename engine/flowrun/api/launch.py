"""Starting a run in its folder, for a new run, a resume and a replay alike: the run built with
the options' limits, its models' keys and its sandbox checked before the folder is made, the
run executed with its log and live exports, and a new run's id."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

from flowrun.api.results import RunResult
from flowrun.errors import ManifestError, UsageError
from flowrun.manifest.diagnostics import Diagnostic, ManifestInvalid
from flowrun.manifest.env_refs import UnsetVariable, unset_diagnostics
from flowrun.manifest.project import Loaded, Project
from flowrun.manifest.specs import Limits, WorkflowManifest
from flowrun.paths import exists
from flowrun.runtime.durable.ledger import Ledger
from flowrun.runtime.durable.run_folder import unwritable
from flowrun.runtime.durable.run_log import RunLog
from flowrun.runtime.execute import RunSummary, execute_run
from flowrun.runtime.loop.sandboxes import sandbox_modes, startup_check
from flowrun.runtime.models.credentials import missing_credentials
from flowrun.runtime.options import RunHooks, RunOptions
from flowrun.runtime.run import Run
from flowrun.runtime.telemetry.live import live_export
from flowrun.tools import sandbox


def new_run(
    project: Project,
    loaded: Loaded[WorkflowManifest],
    inputs: dict[str, object],
    run_dir: Path,
    options: RunOptions,
    hooks: RunHooks,
    ledger: Ledger | None = None,
) -> Run:
    """A run of the workflow `loaded`, with the options' `limits` applied over its own."""
    loaded = loaded if not options.limits else tightened(loaded, options.limits)
    return Run(project, loaded, inputs, run_dir, options, ledger, hooks)


def tightened(
    loaded: Loaded[WorkflowManifest], limits: Mapping[str, float | None]
) -> Loaded[WorkflowManifest]:
    """The workflow with `limits` applied where they are lower than its own (or it has none)."""
    from pydantic import ValidationError

    current = loaded.spec.limits.model_dump()
    unknown = sorted(set(limits) - set(current))
    if unknown:
        raise UsageError(f"unknown limit '{unknown[0]}'", "limits: " + ", ".join(current))
    merged = {key: _tighter(current[key], value) for key, value in limits.items()}
    try:
        tighter = Limits.model_validate({**loaded.spec.limits.model_dump(exclude_unset=True), **merged})
    except ValidationError as e:
        raise UsageError(f"bad limit: {e.errors()[0]['msg']}", "see the workflow's `limits:` keys") from None
    spec = loaded.spec.model_copy(update={"limits": tighter})
    return Loaded(spec, loaded.source, loaded.root, loaded.builtin)


def _tighter(current: object, given: object) -> object:
    """The lower of two numeric limits (None: no limit); a setting (`on_budget`) as given."""
    if given is None:
        return current
    if current is None or not isinstance(given, int | float) or isinstance(given, bool):
        return given
    return min(current, given) if isinstance(current, int | float) else given


_ISSUED: tuple[str, set[str]] = ("", set())  # the ids this process gave out in the current second


def new_run_id(name: str, runs_dir: str | Path | None = None) -> str:
    """`YYYYMMDD-HHMMSS-NAME-<6 hex>`: never one this process gave out already, nor (given the runs
    folder) one whose folder is there: a server or a script starting many runs in one second
    gets as many ids, not a clash that fails a run the user never named."""
    global _ISSUED
    stamp = time.strftime("%Y%m%d-%H%M%S")
    if _ISSUED[0] != stamp:
        _ISSUED = (stamp, set())
    while True:
        run_id = f"{stamp}-{name}-{uuid.uuid4().hex[:6]}"
        if run_id not in _ISSUED[1] and (runs_dir is None or not exists(Path(runs_dir) / run_id)):
            _ISSUED[1].add(run_id)
            return run_id


def check_credentials(run: Run) -> None:
    try:
        missing = missing_credentials(run.project, run.spec, run.models.choice)
    except UnsetVariable as e:  # a model the run uses names an unset ${VAR}: where it is written
        raise ManifestInvalid(str(run.workflow.source.display), _unset_where(run, e)) from None
    if missing:
        needs = "; ".join(f"{env} (for {', '.join(sorted(set(agents)))})" for env, agents in missing.items())
        raise ManifestError(
            f"no model provider is configured: set {needs}",
            "export the key, or try it offline with --dry-run, or use a local server: "
            "--model ollama:llama3.1 (or OPENAI_BASE_URL=http://localhost:8000/v1 --model openai:MODEL)",
        )


def _unset_where(run: Run, e: UnsetVariable) -> list[Diagnostic]:
    """The diagnostics (file:line) of the model whose variable is unset."""
    if e.model in run.spec.models:
        return unset_diagnostics(run.workflow.source, e.model, run.spec.models[e.model])
    loaded = run.project.models.get(e.model)
    if loaded is not None:
        return unset_diagnostics(loaded.source, e.model, loaded.spec)
    raise e


async def probe_sandbox(run: Run) -> None:
    """Before the log or any model request: `required` fails closed here (SandboxError). The
    first probe of a process starts one: in a worker thread (one probe at a time), so the
    loop's other runs go on and a cancel meanwhile (a stopped batch) lands before the run
    begins; later runs read its answer."""
    if not sandbox.probed() and sandbox_modes(run.project, run.spec, run.sandboxes):
        await asyncio.to_thread(sandbox.probe)
    run.sandbox_warning = startup_check(run.project, run.spec, run.sandboxes, run.options.dry_run)


async def execute(run: Run, resume: bool = False) -> RunResult:
    """Run (or, `resume`, continue from its ledger) with the folder's lock held by the caller,
    its log and OpenTelemetry spans written as it goes."""
    try:
        log = RunLog(run.run_dir, run.options.verbosity, run.redactor.text)
    except OSError as e:  # flowrun.log cannot be opened: nothing was recorded
        raise unwritable(run.run_dir, e) from None
    run.files.subscribers.append(log.on_event)
    if run.hooks.on_event is not None:
        run.files.subscribers.append(run.hooks.on_event)
    live = live_export(run)  # OpenTelemetry spans as they happen, when an OTLP endpoint is set
    if live is not None:
        run.files.subscribers.append(live.on_event)
    try:
        summary = await execute_run(run, resume=resume)
    finally:
        log.close()
        if live is not None:
            live.close()
    return _result(run, summary)


def _result(run: Run, summary: RunSummary) -> RunResult:
    """The run's summary as the API returns it."""
    return RunResult(
        status=summary.status,
        exit_code=summary.exit_code,
        message=summary.message,
        output=Path(summary.output) if summary.output else None,
        usage=run.usage.to_dict(),
        run_dir=run.run_dir,
        pending=list(summary.pending),
    )
