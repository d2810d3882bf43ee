"""A recorded run as a resume or a replay reads it: its run.json (or, when that is missing or
damaged, its run_start event), its workflow loaded again, and which of its options may change."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from flowrun.api.workflow import Workflow, load
from flowrun.errors import RunError, UsageError
from flowrun.pinned import read_json_object
from flowrun.records import RunRecord, run_record
from flowrun.runtime.durable.event_log import read_lines
from flowrun.runtime.durable.run_folder import check_records, not_a_run_folder
from flowrun.runtime.options import FIELDS, RunOptions, unknown_option


def recorded_run(run_dir: Path) -> tuple[RunRecord, Workflow]:
    """A run folder's run.json (or, when that is missing or damaged, its run_start event) and
    its workflow, loaded again."""
    if not (run_dir / "events.jsonl").is_file() and not (run_dir / "run.json").is_file():
        raise not_a_run_folder(run_dir)
    check_records(run_dir)
    decoded = read_json_object(run_dir / "run.json")  # ({} when missing, not JSON, not UTF-8)
    if isinstance(decoded.get("workflow_file"), str):
        meta = run_record(decoded)
    else:
        lines = read_lines(run_dir / "events.jsonl")
        start = next((e for e in lines if e.get("type") == "run_start"), None)
        if start is None or not isinstance(start.get("workflow_file"), str):
            raise RunError(
                f"{run_dir} has no run.json and no run_start event",
                "the run never started: run it again with the same --run-id",
            )
        # the options of its last start: a resume may have changed some
        starts = [e for e in lines if e.get("type") in ("run_start", "run_resumed") and e.get("options")]
        latest = [e["options"] for e in starts]
        meta = run_record({**start, **({"options": latest[-1]} if latest else {}), "status": "interrupted"})
    workflow = Path(str(meta.get("workflow_file"))).resolve()
    if not workflow.is_file():
        raise RunError(f"the run's workflow {workflow} no longer exists", "restore it at that path")
    # no head start for the SDKs here: a replay sends nothing (resume starts it once it knows)
    return meta, load(workflow, list(RunOptions.from_record(meta).overrides), prefetch=False)


def option_changes(
    changes: dict[str, object], fixed: Iterable[str], refusal: str, known: Iterable[str]
) -> dict[str, object]:
    """The option changes a resume or replay was given (None: keep the recorded value); one it
    cannot make is a UsageError, an unknown name one with a did-you-mean."""
    for name in changes:
        if name not in FIELDS:
            raise unknown_option(name, [*FIELDS, *known])
        if name in fixed and changes[name] is not None:
            raise UsageError(refusal.format(name=name), "start a new run to change it")
    return {name: value for name, value in changes.items() if value is not None}
