"""`flowrun replay --diff` and `flowrun test` after manifest edits that change the path of a
recorded run: each names the step the edit touched (never an earlier one, and never feeding a
recorded answer to another step): a prompt edited in the middle of a sequence, a step inserted
before the others, a step removed at the end, a lower `max_steps`, an edited `if:` or `until`,
another model; and a cassette given as an events.jsonl file. A resume, unlike a replay, keeps the
`if:` and `until` decisions its log holds."""

from __future__ import annotations

import json
import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cli import run_cli
from support.project import agent, workflow, write_files, write_project

WORKFLOW = """\
version: 1
kind: workflow
name: seq
models:
  s: {provider: scripted, model: s, script: script.yaml}
  other: {provider: scripted, model: other, script: script.yaml}
default_model: s
steps:
  - agent: planner
    task: Plan.
  - agent: writer
    if: "workspace.exists('plan.md')"
    task: Write.
  - loop:
      max_iterations: 2
      until: "workspace.exists('done.md')"
      steps:
        - {agent: looper, task: Loop.}
  - agent: checker
    task: Check.
"""

SCRIPT = {
    "version": 1,
    "kind": "script",
    "agents": {
        "planner": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "plan.md", "content": "plan"}}]},
            {"text": "planned"},
        ],
        "writer": [{"text": "written"}],
        "looper": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "done.md", "content": "done"}}]},
            {"text": "looped"},
        ],
        "checker": [{"text": "checked"}],
        "newbie": [{"text": "new"}],
    },
}


def project(root: Path) -> None:
    team = {n: ["write_file"] for n in ("planner", "writer", "looper", "checker", "newbie")}
    write_project(root, WORKFLOW, team, {"script.yaml": SCRIPT}, name="seq.yaml")


def edit_workflow(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        wf = yaml.safe_load(WORKFLOW)
        change(wf)
        (root / "seq.yaml").write_text(yaml.safe_dump(wf, sort_keys=False))

    return apply


def edit_agent(name: str, **keys: Any) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        write_files(root, {f"agents.d/{name}.yaml": agent(name, tools=["write_file"], **keys)})

    return apply


EDITS: dict[str, tuple[Callable[[Path], None], str, list[str]]] = {
    # the middle step's prompt: the planner before it still matches, the writer is named
    "prompt-in-the-middle": (
        edit_agent("writer", prompt="You are the writer. Cite every source."),
        "agent 'writer' (writer#1) model call 1: its system prompt differs from the recording",
        ["+You are the writer. Cite every source."],
    ),
    # a step inserted first: its agent is not in the recording (the others are not fed its answers)
    "step-inserted": (
        edit_workflow(lambda wf: wf["steps"].insert(0, {"agent": "newbie", "task": "New."})),
        "agent 'newbie' (newbie#0) model call 1 is not in the recording",
        ["the recording has no agent newbie#0: the run took another path before it"],
    ),
    # the last step removed: the replay ends early, with the checker's call unused
    "step-removed": (
        edit_workflow(lambda wf: wf["steps"].pop()),
        "agent 'checker' (checker#3) model call 1 is in the recording but the replay never made it "
        "(1 recorded call(s) unused)",
        ["not made: agent 'checker' (checker#3) model call(s) 1"],
    ),
    # the planner stops after one call now
    "max-steps-lowered": (
        edit_agent("planner", max_steps=1),
        "agent 'planner' (planner#0) model call 2 is in the recording but the replay never made it "
        "(1 recorded call(s) unused)",
        ["not made: agent 'planner' (planner#0) model call(s) 2"],
    ),
    "if-edited": (
        edit_workflow(lambda wf: wf["steps"][1].update({"if": "workspace.exists('nothing.md')"})),
        "step1 if: its condition `workspace.exists('nothing.md')` is now not met; "
        "in the recording it was met",
        ["the condition was edited, or a file or input it reads differs from the recording"],
    ),
    "until-edited": (
        edit_workflow(lambda wf: wf["steps"][2]["loop"].update({"until": "workspace.exists('x.md')"})),
        "loop2 iteration 1 until: its condition `workspace.exists('x.md')` is now not met; "
        "in the recording it was met",
        [],
    ),
    "model-changed": (
        edit_agent("checker", model="other"),
        "agent 'checker' (checker#3) model call 1: its model differs from the recording "
        "(scripted:s → scripted:other)",
        [],
    ),
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("recorded")
    project(root)
    proc = run_cli(["seq.yaml", "--run-id", "r", "-q"], cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    events = [json.loads(line) for line in (root / "runs" / "r" / "events.jsonl").read_text().splitlines()]
    calls = [(e["agent_id"], e["step"]) for e in events if e["type"] == "model_response"]
    assert calls == [
        ("planner#0", 1),
        ("planner#0", 2),
        ("writer#1", 1),
        ("loop2.1/looper#0", 1),
        ("loop2.1/looper#0", 2),
        ("checker#3", 1),
    ]
    return root


def copy_of(recorded: Path, tmp: Path) -> Path:
    """The recorded project in a folder of its own (run.json names the copy's workflow)."""
    root = tmp / "project"
    shutil.copytree(recorded, root)
    meta_file = root / "runs" / "r" / "run.json"
    meta = json.loads(meta_file.read_text())
    meta_file.write_text(json.dumps({**meta, "workflow_file": str(root / "seq.yaml")}))
    return root


def test_an_unchanged_project_replays_whole(recorded: Path, tmp_path: Path) -> None:
    root = copy_of(recorded, tmp_path)
    proc = run_cli(["replay", "runs/r", "--diff"], cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("no step diverges")


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_replay_diff_names_the_edited_step(recorded: Path, tmp_path: Path, edit: str) -> None:
    root = copy_of(recorded, tmp_path)
    change, where, details = EDITS[edit]
    change(root)
    proc = run_cli(["replay", "runs/r", "--diff"], cwd=root)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Traceback" not in out
    first, *rest = proc.stdout.splitlines()
    assert first == f"first differing step: {where}"
    for line in details:
        assert f"  {line}" in rest, rest
    if edit in ("prompt-in-the-middle", "step-removed"):  # a plain replay stops there too, and says so
        plain = run_cli(["replay", "runs/r", "--into", "again", "-q"], cwd=root)
        assert plain.returncode == 1 and f"first differing step: {where}" in plain.stdout + plain.stderr


def test_a_cassette_as_an_events_file_and_a_removed_step(recorded: Path, tmp_path: Path) -> None:
    root = copy_of(recorded, tmp_path)
    (root / "tests" / "cassettes").mkdir(parents=True)
    shutil.copy(root / "runs" / "r" / "events.jsonl", root / "tests" / "cassettes" / "seq.jsonl")
    test_file = textwrap.dedent(
        """\
        version: 1
        kind: test
        name: seq
        workflow: ../seq.yaml
        cassette: cassettes/seq.jsonl
        expect:
          tool_calls:
            - {tool: write_file, agent: planner, arguments: {path: plan.md}}
            - {tool: write_file, agent: looper, arguments: {path: done.md}}
          ordered: true
          files: [plan.md, done.md]
          output: {contains: checked}
        """
    )
    (root / "tests" / "seq.flowrun.yaml").write_text(test_file)
    proc = run_cli(["test", "-v"], cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "every model call came from the cassette (6 recorded)" in proc.stdout

    edit_workflow(lambda wf: wf["steps"].pop())(root)
    proc = run_cli(["test"], cwd=root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        "✗ cassette (tests/seq.flowrun.yaml:5): first differing step: agent 'checker' (checker#3) "
        "model call 1 is in the recording but the replay never made it" in proc.stdout
    )
    assert "not made: agent 'checker' (checker#3) model call(s) 1" in proc.stdout


def test_github_annotations_escape_their_values(recorded: Path, tmp_path: Path) -> None:
    """A test file in a folder whose name holds `,` and `:`, and a failure of several lines: one
    annotation line each, its properties and message escaped as GitHub's workflow commands want."""
    root = copy_of(recorded, tmp_path)
    folder = root / "suite, v1: smoke"
    folder.mkdir()
    shutil.copytree(root / "runs" / "r", folder / "cassette")
    (folder / "seq.flowrun.yaml").write_text(
        "version: 1\nkind: test\nname: seq\nworkflow: ../seq.yaml\ncassette: cassette\n"
    )
    edit_agent("writer", prompt="You are the writer.\nBe brief.")(root)
    proc = run_cli(["test", "--format", "github", "suite, v1: smoke"], cwd=root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (annotation, summary) = proc.stdout.splitlines()
    head, message = annotation.split("::", 2)[1:]
    assert head == "error file=suite%2C v1%3A smoke/seq.flowrun.yaml,line=5,title=flowrun test seq"
    assert message.startswith("cassette: first differing step: agent 'writer' (writer#1) model call 1")
    assert "%0A    --- system prompt (recorded)%0A" in message and "%0A    +Be brief." in message
    assert summary.startswith("1 test(s): 0 passed, 1 failed")


def test_prompts_naming_the_run_folder_and_id_still_replay(tmp_path: Path) -> None:
    """A replay runs in another folder: a prompt or task that names `{{ workspace }}` or
    `{{ run_id }}` is still the recorded request (the id is the recorded one, the folder a
    placeholder in the digests), so it replays and its test passes."""
    wf = workflow(name="where", entry="planner", task="Work in {{ workspace }} for run {{ run_id }}.")
    prompt = "You are the planner of run {{ run_id }}; your folder is {{ workspace }}."
    planner = {"prompt": prompt, "tools": ["write_file"]}
    write_project(tmp_path, wf, {"planner": planner}, {"script.yaml": SCRIPT}, name="where.yaml")
    proc = run_cli(["where.yaml", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    log = (tmp_path / "runs" / "r" / "events.jsonl").read_text().splitlines()
    start = next(e for e in map(json.loads, log) if e["type"] == "agent_start")
    assert start["task"] == f"Work in {(tmp_path / 'runs' / 'r').resolve()} for run r."

    proc = run_cli(["replay", "runs/r", "--diff"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("no step diverges")
    proc = run_cli(["replay", "runs/r", "--into", "again", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    replayed = [json.loads(line) for line in (tmp_path / "again" / "events.jsonl").read_text().splitlines()]
    task = next(e for e in replayed if e["type"] == "agent_start")["task"]
    assert task == f"Work in {(tmp_path / 'again').resolve()} for run r."


@pytest.mark.parametrize("cut_after", ["step_condition", "iteration_end"])
def test_a_resume_keeps_the_recorded_if_and_until(recorded: Path, tmp_path: Path, cut_after: str) -> None:
    """The files the `if:` and the `until` read are gone (a resume does not run the recorded
    tool calls again), and the resumed run still takes the recorded decisions: the writer runs,
    the loop stops after its first iteration."""
    root = copy_of(recorded, tmp_path)
    run_dir = root / "runs" / "r"
    for name in ("plan.md", "done.md"):
        (run_dir / name).unlink()
    lines = (run_dir / "events.jsonl").read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if json.loads(line)["type"] == cut_after)
    (run_dir / "events.jsonl").write_text("".join(lines[: cut + 1]))
    meta = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**meta, "status": "running"}))
    proc = run_cli(["resume", "runs/r", "-q"], cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert any(e["type"] == "agent_end" and e["agent_id"] == "writer#1" for e in events)
    assert [e["iteration"] for e in events if e["type"] == "iteration_start"] == [1]
    assert events[-1]["type"] == "run_end" and events[-1]["status"] == "completed"
