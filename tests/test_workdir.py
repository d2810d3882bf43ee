"""`--workdir PATH` and `workspace.dir`: the agents work in a folder of the user's (kept across
runs, confined by the file tools and the sandbox to it) while the run folder keeps the engine's
files; through the CLI with a scripted model and the real sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.cli import run_cli
from support.project import write_files

SCRIPT = """\
version: 1
kind: script
agents:
  dev:
    - tool_calls:
        - {name: read_file, arguments: {path: src/app.py}}
        - {name: write_file, arguments: {path: NOTES.md, content: "seen\\n", mode: append}}
    - tool_calls:
        - {name: execute_shell, arguments: {command: "ls; echo $HOME; touch made-by-shell.txt"}}
        - {name: read_file, arguments: {path: "../outside.txt"}}
        - {name: execute_shell, arguments: {command: "cat RUN_DIR/events.jsonl | head -c 10"}}
    - text: done
"""


def project(tmp: Path, workflow_extra: str = "") -> Path:
    files = {
        "flow/wf.yaml": (
            "version: 1\nkind: workflow\nname: w\ninputs: {name: {default: demo}}\n"
            "models: {s: {provider: scripted, model: script, script: dev.script.yaml}}\n"
            "default_model: s\nentry: dev\nworkspace: {files: {TASK.md: 'task for {{ name }}'}"
            + workflow_extra
            + "}\n"
        ),
        "flow/dev.script.yaml": SCRIPT.replace("RUN_DIR", str(tmp / "runs" / "r1")),
        "flow/agents.d/dev.yaml": (
            "version: 1\nname: dev\nprompt: p\ntools: [read_file, write_file, execute_shell]\n"
        ),
        "proj/src/app.py": "print('hi')\n",
        "outside.txt": "secret-ish\n",
    }
    return write_files(tmp, files)


def tool_results(run_dir: Path) -> list[dict[str, Any]]:
    """In the order the model asked for them (the log has them as they finished)."""
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    found = [e for e in map(json.loads, lines) if e["type"] == "tool_result"]
    return [e["result"] for e in sorted(found, key=lambda e: e["call_id"])]


def test_workdir_runs_the_agents_in_the_users_folder(tmp_path: Path) -> None:
    project(tmp_path)
    args = ["flow/wf.yaml", "--workdir", "proj", "--runs-dir", "runs", "-q"]
    proc = run_cli([*args, "--run-id", "r1"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proj, run_dir = tmp_path / "proj", tmp_path / "runs" / "r1"
    results = tool_results(run_dir)
    assert results[0]["status"] == "success" and "print('hi')" in results[0]["text"]
    assert (proj / "NOTES.md").read_text() == "seen\n" and (proj / "TASK.md").read_text() == "task for demo"
    shell = results[2]
    assert shell["status"] == "success" and "src" in shell["data"]["stdout"]
    assert str(run_dir / ".home") in shell["data"]["stdout"]  # HOME stays with the run, not in the project
    assert (proj / "made-by-shell.txt").exists()
    assert results[3]["error"]["code"] == "ACCESS_DENIED"  # ../outside.txt
    assert "No such file or directory" in results[4]["data"]["stderr"]  # the run folder is not in the sandbox
    # the engine's files stay in the run folder; the project gets none of them
    assert {p.name for p in run_dir.iterdir()} >= {
        "events.jsonl",
        "run.json",
        "usage.json",
        "prompts",
        ".home",
    }
    assert not (run_dir / "workspace").exists() and not (run_dir / "TASK.md").exists()
    assert {p.name for p in proj.iterdir()} == {"src", "NOTES.md", "TASK.md", "made-by-shell.txt"}
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["options"]["workdir"] == str(proj.resolve())
    # the folder is kept: a second run sees (and adds to) what the first left
    proc = run_cli([*args, "--run-id", "r2"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (proj / "NOTES.md").read_text() == "seen\nseen\n"


def test_a_declared_persistent_folder(tmp_path: Path) -> None:
    project(tmp_path, ", dir: '../state/{{ name }}'")
    (tmp_path / "state" / "alpha" / "src").mkdir(parents=True)
    (tmp_path / "state" / "alpha" / "src" / "app.py").write_text("alpha\n")
    for run_id in ("r1", "r2"):
        args = ["flow/wf.yaml", "--name", "alpha", "--runs-dir", "runs", "--run-id", run_id, "-q"]
        proc = run_cli(args, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "state" / "alpha" / "NOTES.md").read_text() == "seen\nseen\n"
    assert "alpha" in tool_results(tmp_path / "runs" / "r2")[0]["text"]


def test_a_run_folder_inside_the_workdir_keeps_its_files_to_itself(tmp_path: Path) -> None:
    project(tmp_path)
    (tmp_path / "proj" / "src").mkdir(exist_ok=True)
    script = SCRIPT.replace("RUN_DIR/events.jsonl", "runs/r1/events.jsonl").replace(
        "cat runs/r1/events.jsonl | head -c 10", "echo x >> runs/r1/events.jsonl"
    )
    (tmp_path / "flow" / "dev.script.yaml").write_text(script)
    args = ["../flow/wf.yaml", "--workdir", ".", "--runs-dir", "runs", "--run-id", "r1", "-q"]
    proc = run_cli(args, cwd=tmp_path / "proj")
    assert proc.returncode == 0, proc.stderr
    results = tool_results(tmp_path / "proj" / "runs" / "r1")
    assert results[4]["status"] == "error"  # events.jsonl is read-only inside the sandbox


def test_workdir_mistakes(tmp_path: Path) -> None:
    project(tmp_path)
    (tmp_path / "afile").write_text("x")
    for folder, words in (("afile", "is a file"), ("/", "may not work in /")):
        proc = run_cli(["flow/wf.yaml", "--workdir", folder, "--runs-dir", "runs", "-q"], cwd=tmp_path)
        assert proc.returncode == 2 and words in proc.stderr, proc.stderr
