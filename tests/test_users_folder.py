"""Nothing in the user's folder is lost or littered: with --workdir (or workspace.dir) the
roster's seed files never replace a file the folder has (unless a seed says `overwrite: true`)
and the run says so; a dry run writes nothing outside its run folder; a path that exists with
the wrong type is a one-line error. Through the CLI, with the real SDKs against the wire server
and with the scripted provider."""

from __future__ import annotations

import hashlib
import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli
from support.env import WIRES
from support.paths import REPO
from support.project import write_files
from support.runs import events
from support.wire_server import Reply, Script, WireServer, call
from test_rosters import INSTRUCTOR, WORKER, run_example

GITIGNORE = b"# my project's own rules\nnode_modules/\n.env\n"
TASK = b"My own task notes: do not lose these.\r\nLine two, CRLF on purpose.\n"
KEPT = "kept your TASK.md; the roster's version is not written"


def users_project(tmp: Path) -> Path:
    proj = write_files(
        tmp / "proj", {".gitignore": GITIGNORE, "TASK.md": TASK, "src/app.py": "print('hi')\n"}
    )
    return proj


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry of a folder (hidden ones too) with a digest of each file's bytes."""
    found: dict[str, str] = {}
    for dirpath, dirs, files in os.walk(folder):
        for name in dirs:
            found[os.path.relpath(os.path.join(dirpath, name), folder) + "/"] = "dir"
        for name in files:
            path = Path(dirpath) / name
            found[os.path.relpath(path, folder)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def reader_script() -> Script:
    """The instructor reads the two files the roster seeds, then ends; the worker is never called."""
    return Script(
        {
            "instructor": [
                Reply(tool_calls=[call("read_file", path="TASK.md"), call("read_file", path=".gitignore")]),
                Reply(text="Read both.\nDONE"),
            ],
            "worker": [Reply(text="unused")],
        },
        {"instructor": INSTRUCTOR, "worker": WORKER},
    )


@pytest.mark.parametrize("provider", WIRES)
def test_a_workdir_run_keeps_the_users_gitignore_and_task_md(tmp_path: Path, provider: str) -> None:
    proj = users_project(tmp_path)
    before = snapshot(proj)
    with WireServer(reader_script()) as server:
        code, out, run_dir = run_example(
            tmp_path,
            server,
            provider,
            REPO / "examples" / "instructor_worker.yaml",
            {"task": "Write a calculator.", "workdir": str(proj)},
        )
    assert code == 0, out
    assert (proj / "TASK.md").read_bytes() == TASK and (proj / ".gitignore").read_bytes() == GITIGNORE
    assert snapshot(proj) == before
    # said once, in one line each: on the terminal, in the event log and in flowrun.log
    assert out.count(KEPT) == 1 and "kept your .gitignore; the roster's version is not written" in out
    kept = [e for e in events(run_dir) if e["type"] == "seed_kept"]
    assert [e["path"] for e in kept] == ["TASK.md", ".gitignore"]
    assert KEPT in (run_dir / "flowrun.log").read_text()
    # the agents read the user's files, not the roster's
    read = {
        e["result"]["context"]["path_resolved"]: e["result"]["text"]
        for e in events(run_dir)
        if e["type"] == "tool_result"
    }
    assert "My own task notes" in read["TASK.md"] and "node_modules/" in read[".gitignore"]
    # and the instructor is told what is true of TASK.md: kept, not the task's copy
    (task,) = [
        e["task"] for e in events(run_dir) if e["type"] == "agent_start" and e["agent"] == "instructor"
    ]
    assert "also in TASK.md" not in task and "that one was kept" in task


def test_a_dry_run_leaves_the_users_folder_as_it_was(tmp_path: Path) -> None:
    """Both rosters that seed a folder: every tool is called, and the folder's listing and
    contents are the same before and after; the run folder holds the stand-in the agents used."""
    proj = users_project(tmp_path)
    before = snapshot(proj)
    for workflow, flag in (("instructor_worker", "--task"), ("init_execute", "--task")):
        args = [str(REPO / "examples" / f"{workflow}.yaml"), flag, "A unit converter"]
        proc = run_cli([*args, "--dry-run", "--workdir", "proj", "--run-id", workflow], cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert snapshot(proj) == before, workflow
        run_dir = tmp_path / "runs" / workflow
        stand_in = run_dir / "workdir"
        called = {e["tool"] for e in events(run_dir) if e["type"] == "tool_call"}
        assert {"write_file", "edit_file", "read_file", "execute_shell"} <= called
        failed = [
            e for e in events(run_dir) if e["type"] == "tool_result" and e["result"]["status"] == "error"
        ]
        assert failed == []
        wrote = {"instructor_worker": "dry-run", "init_execute": "design"}[workflow]
        assert (stand_in / wrote).is_dir()  # what the dry run wrote went there
        meta = json.loads((run_dir / "run.json").read_text())
        assert meta["options"]["workdir"] == str(proj.resolve()) and meta["options"]["dry_run"] is True
    # instructor_worker seeds TASK.md and .gitignore: both reported kept, the user's copies used
    stand_in = tmp_path / "runs" / "instructor_worker" / "workdir"
    assert (stand_in / "TASK.md").read_bytes() == TASK and (stand_in / ".gitignore").read_bytes() == GITIGNORE
    assert KEPT in (tmp_path / "runs" / "instructor_worker" / "flowrun.log").read_text()
    # init_execute seeds task.md, which the folder does not have: written in the stand-in only
    assert (tmp_path / "runs" / "init_execute" / "workdir" / "task.md").read_text() == "A unit converter\n"
    assert not (proj / "task.md").exists() and not (proj / "design").exists()
    # a real run afterwards is not tripped by anything the dry run left
    assert not (proj / "dry-run").exists()


SCRIPTED = """\
version: 1
kind: workflow
name: w
models: {s: {provider: scripted, model: script, script: dev.script.yaml}}
default_model: s
entry: dev
workspace:
  files:
    TASK.md: {content: "the roster's task\\n", overwrite: true}
    .gitignore: "runs/\\n"
    notes/todo.md: "todo\\n"
"""
DEV = "version: 1\nkind: agent\nname: dev\nprompt: p\ntools: [read_file, write_file]\n"


def dev_project(tmp: Path, replies: str = "    - text: done\n", workflow: str = SCRIPTED) -> Path:
    files = {
        "flow/wf.yaml": workflow,
        "flow/agents.d/dev.yaml": DEV,
        "flow/dev.script.yaml": "version: 1\nkind: script\nagents:\n  dev:\n" + replies,
    }
    return write_files(tmp, files) / "flow" / "wf.yaml"


def test_overwrite_true_replaces_that_seed_only(tmp_path: Path) -> None:
    proj = users_project(tmp_path)
    dev_project(tmp_path)
    proc = run_cli(["flow/wf.yaml", "--workdir", "proj", "--run-id", "r"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (proj / "TASK.md").read_text() == "the roster's task\n"  # overwrite: true
    assert (proj / ".gitignore").read_bytes() == GITIGNORE  # a plain seed: kept
    assert (proj / "notes" / "todo.md").read_text() == "todo\n"  # new: written
    assert "kept your .gitignore; the roster's version is not written" in proc.stderr
    assert "TASK.md" not in proc.stderr
    assert run_cli(["validate", "--strict", "flow/wf.yaml"], cwd=tmp_path).returncode == 0


def test_a_run_folder_gets_every_seed_as_before(tmp_path: Path) -> None:
    """No --workdir: the run folder is new, there is nothing of the user's to keep."""
    dev_project(tmp_path)
    proc = run_cli(["flow/wf.yaml", "--run-id", "r"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp_path / "runs" / "r"
    assert (run_dir / "TASK.md").read_text() == "the roster's task\n"
    assert (run_dir / ".gitignore").read_text() == "runs/\n"
    assert "kept" not in proc.stderr and not [e for e in events(run_dir) if e["type"] == "seed_kept"]


def one_line_error(proc: Any, *words: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "INTERNAL" not in proc.stderr
    first = proc.stderr.strip().splitlines()[0]
    assert first.startswith("error: ") and all(w in first for w in words), proc.stderr


@pytest.mark.parametrize("dry_run", [True, False])
def test_paths_of_the_wrong_type_are_one_line_errors(tmp_path: Path, dry_run: bool) -> None:
    """A folder where a seed file goes, a file where a seed's folder goes, a file as --workdir's
    parent, a folder where `output` goes, a file where a step's workdir goes, a folder where a
    foreach collects: exit 2, one line naming the path, and no run folder is made."""
    flag = ["--dry-run"] if dry_run else []
    dev_project(tmp_path)
    cases: list[tuple[str, list[str], tuple[str, ...]]] = []
    (tmp_path / "p1" / "TASK.md").mkdir(parents=True)
    cases.append(("p1", [], ("workspace.files: TASK.md", "p1/TASK.md is a folder, not a file")))
    (tmp_path / "p2").mkdir()
    (tmp_path / "p2" / "notes").write_text("a file")
    cases.append(("p2", [], ("notes/todo.md", "p2/notes is a file, where a folder is needed")))
    (tmp_path / "afile").write_text("x")
    cases.append(("afile/sub", [], ("--workdir", "afile is a file, where a folder is needed")))
    for workdir, extra, words in cases:
        proc = run_cli(["flow/wf.yaml", "--workdir", workdir, *flag, *extra], cwd=tmp_path)
        one_line_error(proc, *words)
    stepped = SCRIPTED.replace("entry: dev\n", "") + textwrap.dedent(
        """\
        output: report.md
        steps:
          - agent: dev
            workdir: build
          - foreach: {input: items, as: item, collect: results/all.json, step: {agent: dev}}
        inputs: {items: {type: list, default: [a]}}
        """
    )
    dev_project(tmp_path, workflow=stepped)
    for folder, make, words in (
        ("p3", lambda p: (p / "report.md").mkdir(parents=True), ("output report.md", "is a folder")),
        ("p4", lambda p: p.mkdir() or (p / "build").write_text("x"), ("workdir build", "is a file, not")),
        ("p5", lambda p: (p / "results" / "all.json").mkdir(parents=True), ("collect", "is a folder")),
    ):
        make(tmp_path / folder)
        proc = run_cli(["flow/wf.yaml", "--workdir", folder, *flag], cwd=tmp_path)
        one_line_error(proc, *words)
    assert not (tmp_path / "runs").exists()


def test_a_step_folder_decided_during_the_run_fails_it_in_one_line(tmp_path: Path) -> None:
    """A workdir named by the iteration is checked when the loop comes to it: the run fails
    (exit 1) with one line naming the path."""
    looped = SCRIPTED.replace("entry: dev\n", "") + textwrap.dedent(
        """\
        steps:
          - loop:
              max_iterations: 2
              steps: [{agent: dev, workdir: "it_{{ iteration }}"}]
        """
    )
    dev_project(tmp_path, "    - text: one\n", workflow=looped)
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "it_1").write_text("in the way")
    proc = run_cli(["flow/wf.yaml", "--workdir", "proj", "--run-id", "r"], cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "error: workdir it_1: " in proc.stderr and "it_1 is a file, not a folder" in proc.stderr
    assert "Traceback" not in proc.stderr and "INTERNAL" not in proc.stderr
    assert json.loads((tmp_path / "runs" / "r" / "run.json").read_text())["status"] == "failed"


def test_a_file_where_a_tool_needs_a_folder_is_a_tool_error_not_internal(tmp_path: Path) -> None:
    """What the dry run used to leave (a file `design`) made the next run's write of
    design/scenario.md fail with INTERNAL; a user's file of that name now gets an answer the
    model can act on."""
    dev_project(
        tmp_path,
        "    - tool_calls: [{name: write_file, arguments: {path: design/scenario.md, content: x}}]\n"
        "    - text: done\n",
    )
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "design").write_text("a file")
    proc = run_cli(["flow/wf.yaml", "--workdir", "proj", "--run-id", "r"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    [result] = [e["result"] for e in events(tmp_path / "runs" / "r") if e["type"] == "tool_result"]
    assert result["error"]["code"] == "INVALID_PARAM"
    assert "a parent of design/scenario.md is a file" in result["text"]
