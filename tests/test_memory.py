"""Memory across runs through the CLI, over both wire formats (issue 42): what one run writes
with the `memory` tool is in the next run's first model request; a replay after the file was
edited sends what the run saw (and `--memory current` names the edit as the cause of the changed
step); a kill during a write leaves the file whole and `resume` asks no answered model request
again; a Claude Code subagent with `memory: project` uses Claude Code's own folder."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest
from support.cli import popen_cli, run_cli
from support.env import WIRES, model_env
from support.paths import CRASH_POINTS
from support.procs import wait_for
from support.project import model, wire_script, workflow, write_files, write_project
from support.runs import check_log, events, live_events, meta
from support.wire_server import Reply, WireRequest, WireServer, call, calls

NOTE = "- the build needs `make gen` first (found the hard way)\n"
INDEX_TAG = '<memory-index path="/memories/MEMORY.md">'
MEMORY = "/memories/MEMORY.md"


def memory_project(root: Path, wire: str, memory: object = "project") -> Path:
    return write_project(root, workflow(model(wire), entry="boss", task="Go."), {"boss": {"memory": memory}})


def folder_of(root: Path) -> Path:
    return root / ".flowrun" / "memory" / "boss"


@pytest.mark.parametrize("wire", WIRES)
def test_what_a_run_writes_is_in_the_next_runs_prompt_and_a_replay_sends_what_it_saw(
    tmp_path: Path, wire: str
) -> None:
    wf = memory_project(tmp_path, wire)
    create = calls(call("memory", command="create", path=MEMORY, file_text=NOTE))
    with WireServer(wire_script({"boss": [create, Reply("Noted.")]})) as server:
        first = run_cli([str(wf), "--run-id", "r1", "-q"], cwd=tmp_path, env=model_env(server, wire))
    assert first.returncode == 0, first.stdout + first.stderr
    index = folder_of(tmp_path) / "MEMORY.md"
    assert index.read_text() == NOTE
    [write] = [e for e in events(tmp_path / "runs" / "r1") if e["type"] == "memory_write"]
    assert (write["path"], write["before"]) == ("/memories/MEMORY.md", None) and len(write["after"]) == 64
    assert meta(tmp_path / "runs" / "r1")["memory"]["boss"]["files"] == {}  # its state at the start

    with WireServer(wire_script({"boss": [Reply("I remember.")]})) as server:
        second = run_cli([str(wf), "--run-id", "r2", "-q"], cwd=tmp_path, env=model_env(server, wire))
        system = server.requests[0].system
    assert second.returncode == 0, second.stdout + second.stderr
    assert f"{INDEX_TAG}\n{NOTE}</memory-index>" in system
    assert list(meta(tmp_path / "runs" / "r2")["memory"]["boss"]["files"]) == ["MEMORY.md"]

    index.write_text("- edited by a person since\n")
    replayed = run_cli(["replay", "runs/r2", "--into", "replayed", "-q"], cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    [prompt] = [e["system"] for e in events(tmp_path / "replayed") if e["type"] == "agent_prompt"]
    assert NOTE in prompt and "edited by a person" not in prompt
    diff = run_cli(["replay", "runs/r2", "--diff"], cwd=tmp_path)
    assert diff.returncode == 0 and "no step diverges" in diff.stdout, diff.stdout + diff.stderr
    now = run_cli(["replay", "runs/r2", "--diff", "--memory", "current"], cwd=tmp_path)
    assert now.returncode == 1, now.stdout + now.stderr
    assert "first differing step: agent 'boss' (boss) model call 1" in now.stdout
    assert "cause: memory 'boss' changed since the recording" in now.stdout
    assert "+- edited by a person since" in now.stdout
    assert index.read_text() == "- edited by a person since\n"  # no replay changed it


def edit_reply() -> Reply:
    return calls(
        call("memory", command="str_replace", path="/memories/MEMORY.md", old_str="old", new_str="new")
    )


def answered_turns(run_dir: Path) -> set[int]:
    return {e["step"] - 1 for e in live_events(run_dir) if e["type"] == "model_response"}


@pytest.mark.parametrize("wire", WIRES)
def test_a_kill_in_the_middle_of_a_write_leaves_the_old_file_and_resume_makes_it_once(
    tmp_path: Path, wire: str
) -> None:
    """The process dies (as a SIGKILL leaves it) at the memory file's replacement: the new text is
    in the temp file, not yet renamed over MEMORY.md."""
    wf = memory_project(tmp_path, wire)
    write_files(folder_of(tmp_path), {"MEMORY.md": "- old fact\n"})
    with WireServer(wire_script({"boss": [edit_reply(), Reply("Done.")]})) as server:
        crash = {"PYTHONPATH": str(CRASH_POINTS), "FLOWRUN_TEST_CRASH_ROOT": str(folder_of(tmp_path))}
        killed = run_cli(
            [str(wf), "--run-id", "k", "-q"],
            cwd=tmp_path,
            env=model_env(server, wire, **crash, FLOWRUN_TEST_CRASH_AT="1"),
        )
        assert killed.returncode == 137, killed.stdout + killed.stderr
        assert (folder_of(tmp_path) / "MEMORY.md").read_text() == "- old fact\n"
        run_dir = tmp_path / "runs" / "k"
        assert [e["type"] for e in live_events(run_dir)][
            -1
        ] == "memory_write"  # on disk before the file changes
        answered, mark = answered_turns(run_dir), len(server.requests)
        resumed = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path, env=model_env(server, wire))
        asked = [r.assistant_turns for r in server.requests[mark:]]
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert (folder_of(tmp_path) / "MEMORY.md").read_text() == "- new fact\n"
    assert not set(asked) & answered and asked == [1]  # no answered request again: only the next one
    results = [e["result"] for e in check_log(run_dir) if e["type"] == "tool_result"]
    assert [r["status"] for r in results] == ["success"]


@pytest.mark.parametrize("wire", WIRES)
def test_sigkill_after_a_memory_write_leaves_the_file_whole_and_resume_repeats_no_request(
    tmp_path: Path, wire: str
) -> None:
    wf = memory_project(tmp_path, wire)
    write_files(folder_of(tmp_path), {"MEMORY.md": "- old fact\n"})
    release = threading.Event()

    def held(request: WireRequest) -> Reply:
        if request.assistant_turns == 0:
            return edit_reply()
        release.wait(120)  # the request after the write waits here while the run is killed
        return Reply("Done.")

    run_dir = tmp_path / "runs" / "k"
    with WireServer(held) as server:
        child = popen_cli([str(wf), "--run-id", "k", "-q"], tmp_path, model_env(server, wire))
        try:
            wrote = wait_for(lambda: any(e["type"] == "memory_write" for e in live_events(run_dir)))
            child.send_signal(signal.SIGKILL)
            child.communicate(timeout=120)
        finally:
            release.set()
        assert wrote, "the run never wrote its memory"
        assert (folder_of(tmp_path) / "MEMORY.md").read_text() in ("- old fact\n", "- new fact\n")
        answered, mark = answered_turns(run_dir), len(server.requests)
        resumed = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path, env=model_env(server, wire))
        asked = [r.assistant_turns for r in server.requests[mark:]]
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert (folder_of(tmp_path) / "MEMORY.md").read_text() == "- new fact\n"
    assert answered == {0} and asked == [1]
    final = check_log(run_dir)
    assert [e["result"]["status"] for e in final if e["type"] == "tool_result"] == ["success"]
    assert final[-1]["status"] == "completed"


CLAUDE_AGENT = """\
    ---
    name: reviewer
    description: Reviews code and remembers the project's habits.
    tools: Read
    memory: project
    ---
    You are the reviewer.
    """


@pytest.mark.parametrize("wire", WIRES)
def test_a_claude_code_subagent_with_memory_uses_claude_codes_folder(tmp_path: Path, wire: str) -> None:
    spec = workflow(model(wire), entry="reviewer", task="Review.")
    write_files(tmp_path, {"wf.yaml": spec, ".claude/agents/reviewer.md": CLAUDE_AGENT})
    folder = tmp_path / ".claude" / "agent-memory" / "reviewer"
    write_files(folder, {"MEMORY.md": "- tabs, not spaces\n"})
    checked = run_cli(["validate", "."], cwd=tmp_path)
    assert checked.returncode == 0 and "0 error(s), 0 warning(s)" in checked.stdout, checked.stdout
    insert = calls(
        call(
            "memory", command="insert", path="/memories/MEMORY.md", insert_line=1, insert_text="- no globals"
        )
    )
    with WireServer(wire_script({"reviewer": [insert, Reply("Reviewed.")]})) as server:
        proc = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path, env=model_env(server, wire))
        system = server.requests[0].system
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ignored" not in proc.stderr
    assert f"{INDEX_TAG}\n- tabs, not spaces\n</memory-index>" in system
    assert (folder / "MEMORY.md").read_text() == "- tabs, not spaces\n- no globals\n"
