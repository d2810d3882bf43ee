"""What the web UI's run controls ask of `serve http` besides stop and resume: re-run a run (its
workflow, options and inputs, or other inputs), replay it offline with edits (an agent's
prompt, any manifest value, as `--set` changes it) to see the first step they change, and fork
it: that replay made a new run that goes on live from that step (api/forking.py). Only runs of
a workflow this server serves, as for POST /v1/runs; the recorded run's folder is only read."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

from flowrun.api import Workflow, new_run_id, recorded_run, replay
from flowrun.api.forking import fork
from flowrun.api.results import ReplayResult
from flowrun.errors import UsageError
from flowrun.records import RunRecord
from flowrun.runtime.options import RunOptions
from flowrun.serve.served_runs import CLIENT_OPTIONS, Conflict, ServedRuns

EDIT_HINT = 'e.g. {"prompts": {"writer": "You ..."}, "set": {"agents.writer.max_steps": 5}}'


async def rerun(served: ServedRuns, run_id: str, body: Mapping[str, object]) -> str:
    """A new run of the run's workflow with its options and its inputs (or `inputs`); its id."""
    meta, workflow = await asyncio.to_thread(_recorded, served, run_id)
    inputs = body["inputs"] if "inputs" in body else dict(meta.get("inputs") or {})
    recorded = RunOptions.from_record(meta).to_dict()
    options = {name: value for name, value in recorded.items() if name in CLIENT_OPTIONS}
    return await served.start(workflow.name, inputs, options)


async def replay_with_edits(served: ServedRuns, run_id: str, body: Mapping[str, object]) -> dict[str, object]:
    """The run replayed offline with the edits into a folder removed afterwards: where it first
    differs from the recording, and why."""
    folder = _ended(served, run_id)
    edits = edits_of(body)
    await asyncio.to_thread(_recorded, served, run_id)
    return _answer(await replay(folder, diff=True, edits=edits), edits)


async def fork_run(served: ServedRuns, run_id: str, body: Mapping[str, object]) -> dict[str, object]:
    """A new run: the replay with the edits, cut before the first step they change and resumed
    live from there (nothing changed: the replay, left as it ended)."""
    folder = _ended(served, run_id)
    edits = edits_of(body)
    _, workflow = await asyncio.to_thread(_recorded, served, run_id)
    new_id = new_run_id(workflow.name, served.runs_dir)
    result = await fork(folder, served.runs_dir / new_id, edits)
    answer = _answer(result, edits)
    answer["id"] = new_id
    if result.divergence is not None:
        await served.resume(new_id)
        answer["status"] = "running"
    return answer


def edits_of(body: Mapping[str, object]) -> dict[str, object]:
    """`--set` paths and values from a body's `prompts` (agent name -> its new prompt) and `set`
    (path -> value, or "PATH=VALUE" texts read as YAML, as `--set` reads them)."""
    from flowrun.manifest.overrides import parse_overrides

    for name in body:
        if name not in ("prompts", "set"):
            raise UsageError(f"unknown field {name!r} of the edits", EDIT_HINT)
    prompts = body.get("prompts") or {}
    given = body.get("set") or {}
    if not isinstance(prompts, Mapping) or not isinstance(given, Mapping | list):
        raise UsageError("prompts is an object of agent names, set an object or a list", EDIT_HINT)
    edits: dict[str, object] = {}
    for agent, text in prompts.items():
        if not isinstance(text, str) or not text.strip():
            raise UsageError(f"the prompt of {agent!r} must be a text", EDIT_HINT)
        edits[f"agents.{agent}.prompt"] = text
    if isinstance(given, list):
        edits |= {".".join(o.path): o.value for o in parse_overrides([str(t) for t in given])}
    else:
        edits |= {str(path): value for path, value in given.items()}
    if not edits:
        raise UsageError("no edit given: nothing would change", EDIT_HINT)
    return edits


def _answer(result: ReplayResult, edits: Mapping[str, object]) -> dict[str, object]:
    return {
        "status": result.status,
        "recorded_status": result.recorded_status,
        "divergence": result.divergence,
        "differences": result.differences,
        "output_reproduced": result.output_reproduced,
        "edits": sorted(edits),
    }


def _ended(served: ServedRuns, run_id: str) -> Path:
    folder = served.folder(run_id)
    if served.running(run_id):
        raise Conflict(f"run {run_id} is running", "replay it once it has stopped")
    return folder


def _recorded(served: ServedRuns, run_id: str) -> tuple[RunRecord, Workflow]:
    """The run's record and its workflow, which this server must serve (the same file)."""
    meta, workflow = recorded_run(served.folder(run_id))
    path = workflow.path.resolve()
    if not any(wf.path.resolve() == path for wf in served.workflows.values()):
        raise Conflict(
            f"run {run_id}'s workflow {path} is not served here",
            f"start the server with it: flowrun ui {path}",
        )
    return meta, workflow
