"""What a tool leaves in the run folder or the workspace cannot take the engine's own writes
elsewhere: through `flowrun` with the real sandbox, a shell command plants symlinks, a FIFO or
a folder where the engine writes next (its temp files, a step's output, a compaction's
transcript, a sub-agent's output_dir), and the files outside stay as they were."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli
from support.project import SCRIPTED, scripted_project
from support.runs import events, folders

import flowrun
from flowrun.events import Event
from flowrun.tools import sandbox


@pytest.fixture(scope="module", autouse=True)
def _sandbox_works() -> None:
    """These tests run the real sandbox: a machine where it cannot start fails them."""
    found = sandbox.probe(refresh=True)
    assert found.ok, found.reason


def shell(*commands: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "execute_shell", "arguments": {"command": c}} for c in commands]}


def outside(tmp: Path) -> tuple[Path, Path]:
    """A folder out of the run's reach and a file in it, which must stay as they are."""
    folder = tmp / "outside"
    folder.mkdir()
    victim = folder / "victim.txt"
    victim.write_text("precious\n")
    return folder, victim


def untouched(folder: Path, victim: Path) -> None:
    assert victim.read_text() == "precious\n"
    assert sorted(p.name for p in folder.iterdir()) == ["victim.txt"]


def test_what_sits_at_the_temp_names_of_run_json_and_usage_json_is_not_written_through(
    tmp_path: Path,
) -> None:
    folder, victim = outside(tmp_path)
    plant = shell(
        f"ln -s {victim} .run.json.tmp",  # the end's run.json would have rewritten the victim
        f"ln -s {folder}/usage.txt .usage.json.tmp",  # and made a file out of the run folder
    )
    script = {"boss": [plant, shell("mkfifo .run.json.tmp.x"), {"text": "done"}]}
    scripted_project(tmp_path, {"boss": {"tools": ["execute_shell"]}}, script, entry="boss", task="go")
    proc = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    untouched(folder, victim)
    run_dir = tmp_path / "runs" / "r"
    for name in ("run.json", "usage.json"):
        assert not (run_dir / name).is_symlink()
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    assert json.loads((run_dir / "usage.json").read_text())["total_tokens"] > 0


@pytest.mark.parametrize("planted", ["fifo", "folder", "hard link"])
def test_a_fifo_a_folder_or_a_second_link_at_a_temp_name_neither_blocks_nor_takes_the_write(
    tmp_path: Path, planted: str
) -> None:
    make = {
        "fifo": "mkfifo .run.json.tmp && mkfifo .usage.json.tmp",
        "folder": "mkdir -p .run.json.tmp/x .usage.json.tmp",
        "hard link": "echo mine > mine.txt && ln mine.txt .run.json.tmp && ln mine.txt .usage.json.tmp",
    }[planted]
    script = {"boss": [shell(make), {"text": "done"}]}
    scripted_project(tmp_path, {"boss": {"tools": ["execute_shell"]}}, script, entry="boss", task="go")
    proc = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp_path / "runs" / "r"
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    assert json.loads((run_dir / "usage.json").read_text())["total_tokens"] > 0
    if planted == "hard link":  # the agent's own file is not the engine's temp
        assert (run_dir / "mine.txt").read_text() == "mine\n"


def compacting(tmp: Path, plant: str) -> None:
    reads = [{"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]} for _ in range(6)]
    workflow = {
        "entry": "worker",
        "task": "go",
        "workspace": {"files": {"big.txt": "lorem ipsum " * 400}},
        "models": {"m": {**SCRIPTED, "context_window": 4000}},
    }
    agent = {
        "tools": ["read_file", "execute_shell"],
        "context": {"strategy": "compact", "compact_at": 0.5, "keep_recent": 2},
        "max_repeated_calls": 10,
    }
    script = {"worker": [shell(plant), *reads, {"text": "done"}], "worker#compact": [{"text": "read it"}] * 5}
    scripted_project(tmp, {"worker": agent}, script, **workflow)


def test_a_transcript_is_not_written_through_a_symlink_at_its_name(tmp_path: Path) -> None:
    folder, victim = outside(tmp_path)
    compacting(tmp_path, f"mkdir context && ln -s {victim} context/worker-1.md")
    proc = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    untouched(folder, victim)
    transcript = tmp_path / "runs" / "r" / "context" / "worker-1.md"
    assert not transcript.is_symlink() and "lorem ipsum" in transcript.read_text()


def test_a_transcript_folder_swapped_for_a_symlink_out_fails_the_run_and_writes_nothing_there(
    tmp_path: Path,
) -> None:
    folder, victim = outside(tmp_path)
    compacting(tmp_path, f"ln -s {folder} context")
    proc = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 1
    untouched(folder, victim)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "context leads out of" in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert json.loads((tmp_path / "runs" / "r" / "run.json").read_text())["status"] == "failed"


@pytest.mark.parametrize("plant", ["file", "folder"])
def test_a_steps_output_is_not_written_through_a_symlink(tmp_path: Path, plant: str) -> None:
    folder, victim = outside(tmp_path)
    command = f"mkdir out && ln -s {victim} out/report.md" if plant == "file" else f"ln -s {folder} out"
    workflow = {
        "entry": None,
        "task": None,
        "steps": [{"agent": "writer", "task": "write", "output": "out/report.md"}],
    }
    script = {"writer": [shell(command), {"text": "the report"}]}
    scripted_project(tmp_path, {"writer": {"tools": ["execute_shell"]}}, script, **workflow)
    proc = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path)
    untouched(folder, victim)
    assert "Traceback" not in proc.stderr
    report = tmp_path / "runs" / "r" / "out" / "report.md"
    if plant == "file":  # the link inside the workspace is replaced by the report
        assert proc.returncode == 0, proc.stderr
        assert not report.is_symlink() and report.read_text() == "the report"
    else:
        assert proc.returncode != 0 and "out/report.md" in proc.stderr, proc.stderr


def test_a_sub_agents_output_dir_swapped_for_a_symlink_is_not_bound_into_its_sandbox(tmp_path: Path) -> None:
    """The boss calls the helper (writes confined to out/) and, at the same time, swaps out/ for
    a symlink to a folder out of the run; the helper's next command must not get that folder
    writable in its sandbox."""
    folder, victim = outside(tmp_path)
    swap = f"until [ -d out ]; do sleep 0.05; done; mv out old && ln -s {folder} out && touch swapped"
    call = {"name": "helper", "arguments": {"task": "write", "output_dir": "out"}}
    boss = [
        {"tool_calls": [call, {"name": "execute_shell", "arguments": {"command": swap}}]},
        {"text": "done"},
    ]
    helper = [
        shell("until [ -e swapped ]; do sleep 0.05; done"),
        shell(f"echo pwned > {folder}/pwned.txt"),
        {"text": "written"},
    ]
    agents = {
        "boss": {"tools": ["helper", "execute_shell"]},
        "helper": {"description": "Writes.", "tools": ["execute_shell"]},
    }
    scripted_project(tmp_path, agents, {"boss": boss, "helper": helper}, entry="boss", task="go")
    proc = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    untouched(folder, victim)
    results = [e["result"] for e in events(tmp_path / "runs" / "r") if e["type"] == "tool_result"]
    refused = [r for r in results if r.get("error") and r["error"]["code"] == "SANDBOX_UNAVAILABLE"]
    assert len(refused) == 1 and "leads out of" in refused[0]["text"]


# ---------------------------------------------------------------- a folder swapped mid-call
# The file tools run in flowrun's own process. A command running beside them (the calls of one
# response run at once) can swap a folder for a symlink between a tool's path check and its
# open. An audit hook makes that happen at the worst moment: just before flowrun first opens (or
# lists) the watched path, `d/` becomes a symlink to a folder out of the workspace.

_swap: dict[str, Any] = {}


def _swap_hook(event: str, args: tuple[Any, ...]) -> None:
    if not _swap or event not in ("open", "os.scandir", "os.listdir") or not args:
        return
    path = args[0]
    if isinstance(path, int) or path is None:
        return
    text = os.fsdecode(path)
    if text not in _swap["when"]:
        return
    folder, target = _swap.pop("folder"), _swap.pop("target")
    _swap.clear()
    os.rename(folder, folder.with_name("d-before"))
    os.symlink(target, folder)


sys.addaudithook(_swap_hook)


def swapped_call(
    tmp: Path, call: dict[str, Any], when: Callable[[Path], set[str]]
) -> tuple[dict[str, Any], Path]:
    """Run one tool call through the Python API with `d/` swapped at the moment `when(run_dir)`
    names; the call's result and the outside folder (holding secret.txt)."""
    folder = tmp / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("TOP SECRET\n")
    (folder / "x.txt").write_text("outside\n")
    workflow = {
        "entry": "boss",
        "task": "go",
        "workspace": {"files": {"d/secret.txt": "public\n", "d/x.txt": "inside\n"}},
    }
    tools = ["read_file", "write_file", "delete_file", "grep", "list_directory", "edit_file"]
    scripted_project(
        tmp, {"boss": {"tools": tools}}, {"boss": [{"tool_calls": [call]}, {"text": "done"}]}, **workflow
    )
    run_dir = tmp / "runs" / "r"

    def arm(event: Event) -> None:  # once the seeds are written: as the call starts
        if event.type == "tool_call":
            _swap.update(folder=run_dir / "d", target=folder, when=when(run_dir))

    try:
        result = flowrun.load(tmp / "wf.yaml").run_sync(run_dir=run_dir, on_event=arm)
    finally:
        _swap.clear()
    assert result.status == "completed"
    assert (run_dir / "d").is_symlink(), "the swap did not happen"
    results = [e["result"] for e in events(run_dir) if e["type"] == "tool_result"]
    assert len(results) == 1
    return results[0], folder


def _at(*names: str) -> Callable[[Path], set[str]]:
    return lambda run_dir: {str(run_dir / name) for name in names} | set(names)


@pytest.mark.parametrize(
    ("call", "when"),
    [
        ({"name": "read_file", "arguments": {"path": "d/secret.txt"}}, _at("d/secret.txt")),
        ({"name": "grep", "arguments": {"pattern": "SECRET|public"}}, _at("d/secret.txt")),
        (
            {
                "name": "edit_file",
                "arguments": {"path": "d/x.txt", "old_string": "inside", "new_string": "hi"},
            },
            _at("d/x.txt"),
        ),
    ],
    ids=["read_file", "grep", "edit_file"],
)
def test_a_read_never_follows_a_folder_swapped_after_its_check(
    tmp_path: Path, call: dict[str, Any], when: Callable[[Path], set[str]]
) -> None:
    result, folder = swapped_call(tmp_path, call, when)
    assert "TOP SECRET" not in json.dumps(result) and "outside" not in result.get("text", "")
    assert (folder / "x.txt").read_text() == "outside\n" and (
        folder / "secret.txt"
    ).read_text() == "TOP SECRET\n"
    if call["name"] != "grep":  # grep skips the file it cannot read as checked
        assert result["error"]["code"] == "ACCESS_DENIED", result


@pytest.mark.parametrize(
    ("call", "when"),
    [
        (
            {"name": "write_file", "arguments": {"path": "d/x.txt", "content": "pwned", "mode": "overwrite"}},
            _at("d"),
        ),
        ({"name": "write_file", "arguments": {"path": "d/new.txt", "content": "pwned"}}, _at("d")),
        ({"name": "delete_file", "arguments": {"path": "d/x.txt"}}, _at("d")),
        ({"name": "list_directory", "arguments": {"path": ".", "recursive": True}}, _at("d")),
    ],
    ids=["overwrite", "create", "delete", "list"],
)
def test_a_change_never_lands_in_a_folder_swapped_after_its_check(
    tmp_path: Path, call: dict[str, Any], when: Callable[[Path], set[str]]
) -> None:
    result, folder = swapped_call(tmp_path, call, when)
    assert sorted(p.name for p in folder.iterdir()) == ["secret.txt", "x.txt"]
    assert (folder / "x.txt").read_text() == "outside\n"
    if call["name"] == "list_directory":  # the swapped folder is not entered
        assert "secret.txt" not in result["text"] or "d-before" in result["text"], result["text"]
        assert not any(e["path"].startswith("d/") for e in result["data"]["entries"]), result["data"]
    else:
        assert result["error"]["code"] == "ACCESS_DENIED", result


_at_start: dict[str, Any] = {}


def _start_hook(event: str, args: tuple[Any, ...]) -> None:
    """Just before bwrap starts (after the sandbox's folders were checked), swap the watched
    folder for a symlink."""
    if not _at_start or event != "subprocess.Popen" or not any(_at_start["mark"] in str(a) for a in args[1]):
        return
    folder, target = _at_start.pop("folder"), _at_start.pop("target")
    _at_start.clear()
    os.rename(folder, folder.with_name("out-before"))
    os.symlink(
        os.path.relpath(target, folder.parent), folder
    )  # (relative: it resolves in bwrap's new root too)


sys.addaudithook(_start_hook)


def test_a_writable_folder_swapped_as_its_sandbox_starts_is_not_what_gets_bound(tmp_path: Path) -> None:
    """A sub-agent's output_dir is checked, then swapped for a symlink to a folder the sandbox
    shows read-only (a data set in ro_binds) just before bwrap starts: bwrap must bind the
    checked folder, so the data set stays read-only and unchanged."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "keep.txt").write_text("data set\n")
    call = {"name": "helper", "arguments": {"task": "write", "output_dir": "out"}}
    helper = [shell(f"echo pwned > {data}/pwned.txt; echo mark-7f3a"), {"text": "written"}]
    agents = {
        "boss": {"tools": ["helper"]},
        "helper": {"description": "Writes.", "tools": ["execute_shell"]},
    }
    workflow = {"entry": "boss", "task": "go", "sandbox": {"mode": "required", "ro_binds": [str(data)]}}
    scripted_project(
        tmp_path, agents, {"boss": [{"tool_calls": [call]}, {"text": "done"}], "helper": helper}, **workflow
    )
    run_dir = tmp_path / "runs" / "r"
    _at_start.update(folder=run_dir / "out", target=data, mark="mark-7f3a")
    try:
        result = flowrun.load(tmp_path / "wf.yaml").run_sync(run_dir=run_dir)
    finally:
        _at_start.clear()
    assert result.status == "completed"
    assert (run_dir / "out").is_symlink(), "the swap did not happen"
    assert sorted(p.name for p in data.iterdir()) == ["keep.txt"]
    assert (data / "keep.txt").read_text() == "data set\n"


def test_a_run_folder_inside_the_workdir_moved_away_keeps_the_runs_records(tmp_path: Path) -> None:
    """With --workdir, a runs folder inside it is visible to the shell: moved away and replaced by
    a symlink, the run's later writes (its prompt records, run.json and usage.json at the end)
    still go to the run's own folder, never where the symlink points."""
    folder, victim = outside(tmp_path)
    move = f"mv runs/r runs/moved && ln -s {folder} runs/r"
    call = {"name": "helper", "arguments": {"task": "look"}}
    script = {"boss": [shell(move), {"tool_calls": [call]}, {"text": "done"}], "helper": [{"text": "seen"}]}
    agents = {"boss": {"tools": ["execute_shell", "helper"]}, "helper": {"description": "Looks."}}
    scripted_project(tmp_path, agents, script, entry="boss", task="go")
    proc = run_cli(["wf.yaml", "--run-id", "r", "--workdir", ".", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    untouched(folder, victim)
    moved = tmp_path / "runs" / "moved"
    assert json.loads((moved / "run.json").read_text())["status"] == "completed"
    assert json.loads((moved / "usage.json").read_text())["total_tokens"] > 0
    assert (moved / "prompts" / "boss.helper@call_1.md").exists() or len(
        list((moved / "prompts").iterdir())
    ) == 2


def test_the_http_apis_file_route_serves_the_file_it_checked(tmp_path: Path) -> None:
    """GET /v1/runs/ID/files/PATH checks the path, then opens it: a running tool that swaps a
    folder on it for a symlink in between must not get an outside file served."""
    from flowrun.serve.http_app import open_confined

    folder, _ = outside(tmp_path)
    (folder / "note.md").write_text("TOP SECRET\n")
    run_dir = tmp_path / "run"
    (run_dir / "d").mkdir(parents=True)
    (run_dir / "d" / "note.md").write_text("# inside\n")
    opened = open_confined(run_dir, "d/note.md")
    assert opened is not None and opened[0].read() == b"# inside\n"
    opened[0].close()
    _swap.update(folder=run_dir / "d", target=folder, when={str(run_dir.resolve() / "d" / "note.md")})
    try:
        assert open_confined(run_dir, "d/note.md") is None
    finally:
        _swap.clear()
    assert (run_dir / "d").is_symlink(), "the swap did not happen"


@pytest.fixture
def deep_tmp(tmp_path: Path) -> Iterator[Path]:
    """tmp_path, emptied with `rm -rf` after the test: pytest's own cleanup (shutil.rmtree)
    recurses, and fails on 3,000 nested folders."""
    yield tmp_path
    subprocess.run(["rm", "-rf", str(tmp_path / "runs")], check=True)


def test_a_folder_tree_nested_thousands_deep_is_walked_to_256_levels(deep_tmp: Path) -> None:
    """A shell nests 3,000 folders: list_directory, glob and grep walk the first 256 levels (no
    tool takes a longer path) instead of failing with a RecursionError."""
    nest = "python3 -c \"import os\nfor _ in range(3000): os.mkdir('d'); os.chdir('d')\""
    calls = [
        {"name": "list_directory", "arguments": {"path": ".", "recursive": True, "max_entries": 1}},
        {"name": "glob", "arguments": {"pattern": "**/nothing"}},
        {"name": "grep", "arguments": {"pattern": "nothing"}},
    ]
    script = {"boss": [shell(nest), {"tool_calls": calls}, {"text": "done"}]}
    tools = ["execute_shell", "list_directory", "glob", "grep"]
    scripted_project(deep_tmp, {"boss": {"tools": tools}}, script, entry="boss", task="go")
    proc = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=deep_tmp)
    assert proc.returncode == 0, proc.stderr
    results = {e["tool"]: e["result"] for e in events(deep_tmp / "runs" / "r") if e["type"] == "tool_result"}
    assert results["list_directory"]["data"]["total"] >= 256, results["list_directory"]
    assert results["glob"]["status"] == "success" and results["grep"]["status"] == "success", results


def test_a_sub_agents_output_nested_thousands_deep_still_reports_its_files(deep_tmp: Path) -> None:
    """The files a sub-agent wrote under its output_dir are found by a walk: 3,000 nested
    folders there end in its result, not in a RecursionError; the run folder's listing in the
    HTTP API walks the same way."""
    from flowrun.serve.http_app import list_files

    deep = "python3 -c \"import os\nfor _ in range(3000): os.mkdir('d'); os.chdir('d')\""
    nest = f"cd out && echo hi > top.md && {deep}"
    call = {"name": "helper", "arguments": {"task": "write", "output_dir": "out"}}
    script = {
        "boss": [{"tool_calls": [call]}, {"text": "done"}],
        "helper": [shell(nest), {"text": "written"}],
    }
    agents = {"boss": {"tools": ["helper"]}, "helper": {"description": "Writes.", "tools": ["execute_shell"]}}
    scripted_project(deep_tmp, agents, script, entry="boss", task="go")
    proc = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=deep_tmp)
    assert proc.returncode == 0, proc.stderr
    run_dir = deep_tmp / "runs" / "r"
    helper = next(
        e["result"] for e in events(run_dir) if e["type"] == "tool_result" and e["tool"] == "helper"
    )
    assert helper["status"] == "success" and helper["data"]["output_files"] == ["out/top.md"], helper
    assert "out/top.md" in {f["path"] for f in list_files(run_dir)}


def test_a_fifo_or_a_folder_where_a_run_keeps_its_records_hangs_no_command(tmp_path: Path) -> None:
    """A FIFO (or a folder) at run.json, events.jsonl or usage.json of a run folder, made by
    hand or by an agent's shell when the runs folder is inside its workdir: every command that
    reads run folders answers at once (resume, replay, answer and show refuse that one; runs
    and the HTTP API list the others). They had waited forever for a writer, SIGTERM too."""
    from support.served import Served

    scripted_project(tmp_path, {"boss": {"tools": []}}, {"boss": [{"text": "done"}]}, entry="boss", task="go")
    proc = run_cli(["wf.yaml", "--run-id", "good", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    runs = tmp_path / "runs"
    for name, what in (("fifo", os.mkfifo), ("folder", os.mkdir)):
        for record in ("run.json", "events.jsonl", "usage.json"):
            planted = runs / f"{name}-{record.split('.')[0]}"
            subprocess.run(["cp", "-r", str(runs / "good"), str(planted)], check=True)
            (planted / record).unlink()
            what(planted / record)
    planted = sorted(p.name for p in folders(runs) if p.name != "good")
    for run_id in planted:
        for args in (["resume"], ["replay"], ["show"], ["show", "--messages"], ["answer"]):
            shown = run_cli(
                [*args, f"runs/{run_id}", *(["yes"] if args == ["answer"] else [])], cwd=tmp_path, timeout=60
            )
            assert "Traceback" not in shown.stderr and shown.returncode in (0, 1, 2), (
                run_id,
                args,
                shown.stderr,
            )
    listed = run_cli(["runs"], cwd=tmp_path, timeout=60)
    assert listed.returncode == 0 and "good" in listed.stdout, listed.stderr
    served = Served(tmp_path, ["wf.yaml", "--port", "0"])
    try:
        with served.client() as http:
            assert "good" in {r["id"] for r in http.get("/v1/runs").json()["runs"]}
            for run_id in planted:
                assert http.get(f"/v1/runs/{run_id}").status_code in (200, 404), run_id
                assert http.get(f"/v1/runs/{run_id}/files").status_code in (200, 404), run_id
    finally:
        served.stop()
