"""The JSON shapes in flowrun/records.py are what a run writes: a dry run's usage.json, run.json,
its `run_start` options and `run_end` usage have exactly the keys the TypedDicts declare (so the
readers that rely on them read what is there), and they read back through the Python API."""

from __future__ import annotations

import json
import typing
from pathlib import Path

from support.paths import REPO

import flowrun
from flowrun import records
from flowrun.events import RunEndEvent, RunStartEvent
from flowrun.runtime.durable.event_log import read_events
from flowrun.tools.sandbox import Mode

CURRENT_RUN_KEYS = {
    "run_id",
    "workflow",
    "workflow_file",
    "inputs",
    "status",
    "options",
    "chat",
    "output",
    "updated",
}


def _dry_run(tmp_path: Path) -> Path:
    wf = flowrun.load(REPO / "examples" / "research.yaml")
    result = wf.run_sync({"question": "what is a dry run?"}, runs_dir=tmp_path, run_id="r", dry_run=True)
    assert result.status == "completed"
    assert set(result.usage) == set(typing.get_type_hints(records.UsageRecord))
    return result.run_dir


def test_usage_json_has_the_declared_keys(tmp_path: Path) -> None:
    usage = json.loads((_dry_run(tmp_path) / "usage.json").read_text())
    assert set(usage) == set(typing.get_type_hints(records.UsageRecord))
    assert usage["by_agent_model"], "a dry run calls the test model"
    for line in usage["by_agent_model"]:
        assert set(line) == set(typing.get_type_hints(records.AgentModelUsage))
        assert set(line["usage"]) == set(typing.get_type_hints(records.TokenCounts))
    for entry in usage["by_model"].values():
        assert set(entry) == set(typing.get_type_hints(records.ModelUsage))
    declared = set(typing.get_type_hints(records.SubtreeUsage))
    budgeted = {"budget", "exhausted"}  # NotRequired: only a sub-tree with a per-call budget has them
    for tree in usage["by_subtree"]:
        assert set(tree) - budgeted == declared - budgeted and set(tree) <= declared


def test_run_json_and_the_events_have_the_declared_keys(tmp_path: Path) -> None:
    run_dir = _dry_run(tmp_path)
    meta = json.loads((run_dir / "run.json").read_text())
    assert set(meta) == CURRENT_RUN_KEYS
    assert CURRENT_RUN_KEYS <= set(typing.get_type_hints(records.RunRecord))
    assert set(meta["options"]) == set(typing.get_type_hints(records.OptionsRecord))
    events = read_events(run_dir / "events.jsonl")
    start = next(e for e in events if isinstance(e, RunStartEvent))
    end = next(e for e in events if isinstance(e, RunEndEvent))
    assert start.options == meta["options"]
    assert set(end.usage) == set(typing.get_type_hints(records.UsageRecord))
    assert flowrun.RunOptions.from_record(records.run_record(meta)).dry_run


def test_the_recorded_sandbox_modes_are_the_sandbox_modes() -> None:
    assert typing.get_args(records.Sandbox) == typing.get_args(Mode)
