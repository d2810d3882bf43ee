"""Run folders written by earlier versions still resume and replay: tests/data/legacy_v1/run was
recorded by flowrun 0.1.0 (before typed events and the package move) with a scripted model,
command tools and an agent called as a tool."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO, run_cli

LEGACY = REPO / "tests" / "data" / "legacy_v1"


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    """A copy of the recording whose run.json and run_start point at the workflow's copy."""
    project = tmp_path / "legacy"
    shutil.copytree(LEGACY, project)
    run_dir = project / "run"
    workflow = str((project / "workflow.yaml").resolve())
    meta = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**meta, "workflow_file": workflow}))
    lines = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    lines[0]["workflow_file"] = workflow
    (run_dir / "events.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return run_dir


NEWER_EVENTS = {"agent_prompt", "tool_intent"}  # written by later versions (rendered prompts, intents)


def events(run_dir: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def test_legacy_run_replays_and_reproduces_its_output(legacy: Path, tmp_path: Path) -> None:
    proc = run_cli(["replay", str(legacy), "--into", str(tmp_path / "again")], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "output reproduced: data.txt" in proc.stdout
    # the replay writes what the recording has, plus the event types added since 0.1.0
    replayed = [e for e in events(tmp_path / "again") if e["type"] not in NEWER_EVENTS]
    assert [e["type"] for e in replayed] == [e["type"] for e in events(legacy)]
    assert all(e.get("replayed") for e in replayed if e["type"] == "model_response")


def test_legacy_run_cut_after_a_sub_agent_call_resumes(legacy: Path, tmp_path: Path) -> None:
    recorded = events(legacy)
    cut = next(i for i, e in enumerate(recorded) if e["type"] == "model_response" and e["agent"] == "helper")
    (legacy / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in recorded[: cut + 1]))
    meta = json.loads((legacy / "run.json").read_text())
    (legacy / "run.json").write_text(json.dumps({**meta, "status": "running"}))
    proc = run_cli(["resume", str(legacy)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = events(legacy)
    assert [e["seq"] for e in after] == list(range(1, len(after) + 1))
    assert sum(e["type"] == "run_end" for e in after) == 1
    # the rest of the run matches the original: no model call was made twice
    responses = [(e["agent_id"], e["step"]) for e in after if e["type"] == "model_response"]
    assert len(responses) == len(set(responses)) == sum(e["type"] == "model_response" for e in recorded)
    assert json.loads((legacy / "run.json").read_text())["status"] == "completed"
