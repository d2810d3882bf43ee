"""`flowrun.replay`: a recorded run re-run into a new folder with no network, model calls
answered from its log, and compared with the recording (its output, where it first diverged)."""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

from flowrun.api.launch import execute, new_run, probe_sandbox
from flowrun.api.recorded import option_changes, recorded_run
from flowrun.api.results import ReplayResult, RunResult
from flowrun.api.workflow import Workflow, load
from flowrun.errors import UsageError
from flowrun.manifest.overrides import parse_overrides
from flowrun.paths import claim_folder
from flowrun.records import ReplayDivergence, RunRecord
from flowrun.runtime.durable.ledger import Ledger
from flowrun.runtime.durable.run_folder import RunFolderLock, claim_new
from flowrun.runtime.kinds import kind_records
from flowrun.runtime.memory.record import RecordedMemory
from flowrun.runtime.options import FIELDS, OnEvent, RunHooks, RunOptions

REPLAY_CHANGES = ("sandbox", "verbosity")  # a replay runs with the recorded options but these
MemoryView = Literal["recorded", "current"]  # the memories a replay's prompts get
REPLAY_KEYWORDS = ("into", "diff", "on_event", "edits", "memory")  # replay()'s own, beside the options


async def replay(
    run_dir: str | Path,
    *,
    into: str | Path | None = None,
    diff: bool = False,
    on_event: OnEvent | None = None,
    edits: Mapping[str, object] | Iterable[str] | None = None,
    memory: MemoryView = "recorded",
    **changes: object,
) -> ReplayResult:
    """Re-run a recorded run into a new folder with no network: model calls come from the log,
    local tools run again to rebuild the files, and the output is compared with the original.
    It runs with the recorded options (but the workdir: it replays into its own folder);
    `sandbox` and `verbosity` may be changed (a None value keeps the recorded one). A call the
    recording cannot answer, or one whose system prompt, tools or history differ, ends the
    replay `failed` at the first differing step (`divergence`, `differences`). With `diff` and
    no `into`, the replay goes to a temporary folder that is removed afterwards. `edits` change
    manifest values over the recorded `--set`s, as `--set` does (`{"agents.writer.prompt":
    "..."}` or `["agents.writer.max_steps=3"]`): what the run would have done with them, up
    to the first step they change; the replay records them, so a resume of its folder goes
    on, live, with them. The agents' memories are read as the run saw them; `memory="current"`
    gives each prompt its memory as it is now (a copy in the replay's folder), so a memory
    change shows as the step it changes."""
    if memory not in ("recorded", "current"):
        raise UsageError(f"unknown memory view {memory!r}", "use recorded or current")
    run_dir = Path(run_dir)
    meta, workflow = recorded_run(run_dir)
    options = replay_options(meta, **changes)
    if edits:
        texts = tuple(o.text for o in parse_overrides(edits))
        options = dataclasses.replace(options, overrides=(*options.overrides, *texts))
        workflow = load(workflow.path, list(options.overrides), prefetch=False)
    temporary = diff and into is None
    target = (
        Path(tempfile.mkdtemp(prefix="flowrun-replay-"))
        if temporary
        else Path(into)
        if into is not None
        else _replay_folder(run_dir)
    )
    if not temporary and target.exists() and any(target.iterdir()):
        raise UsageError(f"{target} already exists", "choose another --into folder")
    try:
        result, ledger = await replay_events(
            workflow, run_dir / "events.jsonl", meta, target, options, RunHooks(on_event), memory
        )
        return _compared(result, run_dir, meta, ledger)
    except BaseException:
        if into is None and not temporary:  # the RUN-replay folder this replay made, still empty
            with contextlib.suppress(OSError):
                target.rmdir()
        raise
    finally:
        if temporary:
            shutil.rmtree(target, ignore_errors=True)


def replay_options(record: RunRecord, **changes: object) -> RunOptions:
    """The options a recorded run (its run.json, or its run_start event) ran with, for replaying
    it: the agents work in the replay's own folder; only `sandbox` and `verbosity` change."""
    fixed = tuple(name for name in FIELDS if name not in REPLAY_CHANGES)
    changes = option_changes(changes, fixed, "a replay keeps the recorded {name}", REPLAY_KEYWORDS)
    recorded = RunOptions.from_record(record)
    return dataclasses.replace(recorded, workdir=None).changed(REPLAY_KEYWORDS, **changes)


async def replay_events(
    workflow: Workflow,
    events: Path,
    meta: RunRecord,
    target: Path,
    options: RunOptions,
    hooks: RunHooks | None = None,
    memory: MemoryView = "recorded",
) -> tuple[RunResult, Ledger]:
    """Replay a recorded event log with `workflow` (as it is now) into `target`; the ledger
    says where it first diverged."""
    ledger = Ledger.from_events(events, "replay", kind_records())
    ledger.record(RecordedMemory).current = memory == "current"
    inputs = dict(meta.get("inputs") or {})
    run = new_run(workflow.project, workflow.loaded, inputs, target, options, hooks or RunHooks(), ledger)
    await probe_sandbox(run)
    async with RunFolderLock(target):
        claim_new(target)
        result = await execute(run)
    return result, ledger


def _compared(result: RunResult, run_dir: Path, meta: RunRecord, ledger: Ledger) -> ReplayResult:
    """The replay next to its recording: the output, and where it first diverged."""
    target = result.run_dir
    divergence, differences = None, []
    if ledger.divergence is not None:
        point = ledger.divergence
        divergence = ReplayDivergence(
            {
                "agent": point.agent,
                "agent_id": point.agent_id,
                "step": point.step,
                "reason": point.reason,
                "message": point.message,
            }
        )
        from flowrun.runtime.replay.diff import divergence_details  # only a diverged replay

        differences = divergence_details(run_dir / "events.jsonl", target / "events.jsonl", point)
    recorded_status = str(meta.get("status") or "")
    output = meta.get("output")
    same: bool | None = None
    original, again = run_dir / str(output), target / str(output)
    if output and result.status == recorded_status and (original.exists() or again.exists()):
        same = again.exists() and original.exists() and original.read_bytes() == again.read_bytes()
    return ReplayResult(
        **vars(result),
        recorded_status=recorded_status,
        declared_output=output,
        output_reproduced=same,
        divergence=divergence,
        differences=differences,
    )


def _replay_folder(run_dir: Path) -> Path:
    """`RUN-replay`, else `RUN-replay2`, ...: made here (mkdir claims the name), so two replays
    of one run at once get a folder each."""
    try:
        return claim_folder(lambda n: run_dir.with_name(f"{run_dir.name}-replay{n if n > 1 else ''}"))
    except OSError as e:
        raise UsageError(
            f"cannot create a replay folder beside {run_dir}: {e.strerror or e}",
            "give --into a folder you can write",
        ) from None
