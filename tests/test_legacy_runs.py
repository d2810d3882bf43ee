"""Run folders written by earlier versions still resume and replay: tests/data/legacy_v1/run was
recorded by flowrun 0.1.0 (before typed events and the package move) with a scripted model,
command tools and an agent called as a tool; a run folder of the flat run.json layout (the
options as keys of their own, before the `options` object) is made from a new run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.cli import run_cli
from support.paths import REPO
from support.runs import events

import flowrun

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


# ---------------------------------------------------------------- the flat layout of run.json

RESEARCH = REPO / "examples" / "research.yaml"
FLAT_KEYS = ("dry_run", "model_override", "agent_models", "overrides", "no_thinking", "workdir")


def flat_layout(run_dir: Path) -> None:
    """Rewrite a run folder's run.json and run_start event as flowrun wrote them before the
    `options` object: the options as flat keys, `--model M` as `model_override`, and the knobs
    those versions did not record (sandbox, yes, stream, limits, verbosity) left out."""
    meta = json.loads((run_dir / "run.json").read_text())
    options = meta.pop("options")
    flat = {
        "dry_run": options["dry_run"],
        "model_override": options["model"],
        "agent_models": options["agent_models"],
        "overrides": options["overrides"],
        "no_thinking": options["no_thinking"],
        "workdir": options["workdir"],
    }
    keys = list(meta)
    at = keys.index("status") + 1
    meta = {k: meta[k] for k in keys[:at]} | flat | {k: meta[k] for k in keys[at:]}
    (run_dir / "run.json").write_text(json.dumps(meta, indent=2))
    lines = events(run_dir)
    start = lines[0]
    options = start.pop("options")
    start.update(dry_run=options["dry_run"], model_override=options["model"])
    for key in ("agent_models", "overrides", "workdir"):
        if options[key]:
            start[key] = options[key]
    (run_dir / "events.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def flat_run(tmp_path: Path, *flags: str) -> Path:
    args = [str(RESEARCH), "--question", "q", "--runs-dir", str(tmp_path / "runs"), "--run-id", "r", "-q"]
    proc = run_cli([*args, "--dry-run", "--set", "agents.searcher.max_steps=2", *flags], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = tmp_path / "runs" / "r"
    flat_layout(run_dir)
    assert not {"options"} & set(json.loads((run_dir / "run.json").read_text()))
    assert set(FLAT_KEYS) <= set(json.loads((run_dir / "run.json").read_text()))
    return run_dir


def test_a_run_of_the_flat_layout_resumes_with_its_options(tmp_path: Path) -> None:
    work = tmp_path / "work"
    run_dir = flat_run(tmp_path, "--model", "writer=openai:gpt-test", "--no-thinking", "--workdir", str(work))
    shown = run_cli(["show", str(run_dir)], cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert (
        "options: --dry-run --model writer=openai:gpt-test --set agents.searcher.max_steps=2 "
        f"--no-thinking --workdir {work.resolve()}" in shown.stdout
    )
    listed = run_cli(["runs", "--runs-dir", str(tmp_path / "runs")], cwd=tmp_path)
    assert "research (dry run)" in listed.stdout
    # killed after the searcher's first answer, before the writer wrote the report
    recorded = events(run_dir)
    cut = next(
        i for i, e in enumerate(recorded) if e["type"] == "model_response" and e["agent"] == "searcher"
    )
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in recorded[: cut + 1]))
    stand_in = run_dir / "workdir"  # a dry run works in a stand-in for --workdir, never in it
    (stand_in / "report.md").unlink()
    meta = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**meta, "status": "running"}))
    # no key in the environment: it goes on only as the dry run it was
    proc = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ended = [e for e in events(run_dir) if e["type"] == "agent_end" and e["agent"] == "searcher"]
    assert [(e["status"], e["steps"]) for e in ended] == [("max_steps", 2)]  # its --set
    assert (stand_in / "report.md").is_file() and not (work / "report.md").exists()  # its workdir's stand-in
    after = json.loads((run_dir / "run.json").read_text())
    assert after["status"] == "completed" and not set(FLAT_KEYS) & set(after)
    assert after["options"] == {
        **flowrun.RunOptions().to_dict(),
        "dry_run": True,
        "agent_models": {"writer": "openai:gpt-test"},
        "overrides": ["agents.searcher.max_steps=2"],
        "no_thinking": True,
        "workdir": str(work.resolve()),
    }


def test_a_run_of_the_flat_layout_replays_and_reproduces_its_output(tmp_path: Path) -> None:
    run_dir = flat_run(tmp_path, "--model", "openai:gpt-test")
    proc = run_cli(["replay", str(run_dir), "--into", str(tmp_path / "again")], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "output reproduced: report.md" in proc.stdout
    again = json.loads((tmp_path / "again" / "run.json").read_text())["options"]
    assert (again["dry_run"], again["model"], again["overrides"]) == (
        True,
        "openai:gpt-test",
        ["agents.searcher.max_steps=2"],
    )
