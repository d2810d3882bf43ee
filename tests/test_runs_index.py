"""The runs index (runtime/durable/runs_index.py): `flowrun.list_runs` and `flowrun runs` read
`.index.sqlite` in the runs folder, made when missing, rebuilt when deleted or damaged, brought
up to date when folders are added, changed or removed behind its back, and updated by the runtime
itself when a run's run.json changes; a run that says it is running is `running` only while a
live process holds its lock."""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli
from support.paths import REPO
from support.project import write_files

import flowrun
from flowrun.runtime.durable import run_folder, runs_index
from flowrun.runtime.durable.runs_index import INDEX_NAME, SCHEMA_VERSION, list_runs

WORKFLOW = """\
version: 1
kind: workflow
name: tiny
inputs:
  topic: {description: What to write about.}
models: {m: {provider: test, model: t}}
default_model: m
entry: writer
output: report.md
"""
WRITER = "version: 1\nkind: agent\nname: writer\nprompt: Write the report.\ntools: [write_file]\n"


def generate(runs: Path, n: int, now: float = 1_800_000_000.0) -> None:
    spec = importlib.util.spec_from_file_location("run_folders", REPO / "bench" / "run_folders.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.generate(runs, n, now)


def ids(runs: Any) -> list[str]:
    return [entry.id for entry in runs]


def test_the_lock_file_name_is_the_run_folders() -> None:
    assert runs_index.LOCK_NAME == run_folder.LOCK_NAME


def test_the_index_is_made_then_kept_up_to_date_behind_its_back(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    generate(runs, 30)
    page = flowrun.list_runs(runs, limit=5)
    assert (runs / INDEX_NAME).is_file()
    assert page.total == 30 and ids(page) == [f"run-{i:06d}" for i in range(29, 24, -1)]
    first = page.runs[0]
    assert first.status == "completed" and first.workflow == "review" and first.total_tokens == 150
    assert first.input_tokens == 100 and first.output_tokens == 50 and first.steps == 2
    assert first.duration_s == pytest.approx(5.0) and first.to_dict()["id"] == "run-000029"

    (runs / INDEX_NAME).unlink()  # deleted: made again from the folders
    assert list_runs(runs).total == 30

    (runs / "run-000003" / "run.json").unlink()  # changed: its status now comes from its log
    os.rename(runs / "run-000004", runs / "renamed")  # a folder renamed
    (runs / "run-000005" / "events.jsonl").write_text("")  # emptied
    meta = json.loads((runs / "run-000006" / "run.json").read_text())
    (runs / "run-000006" / ".run.json.tmp").write_text(json.dumps({**meta, "status": "completed"}))
    os.replace(
        runs / "run-000006" / ".run.json.tmp", runs / "run-000006" / "run.json"
    )  # as the runtime writes
    (runs / "not-a-run").mkdir()
    (runs / "stray.txt").write_text("not a folder")
    listed = {entry.id: entry for entry in list_runs(runs)}
    assert "run-000004" not in listed and listed["renamed"].workflow == "research"
    assert listed["run-000003"].status == "failed"  # its run_end says so
    assert listed["run-000006"].status == "completed" and "not-a-run" not in listed
    assert len(listed) == 30


def test_a_damaged_or_foreign_index_is_rebuilt(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    generate(runs, 12)
    (runs / INDEX_NAME).write_bytes(b"this is not a database at all" * 100)
    assert list_runs(runs).total == 12
    with sqlite3.connect(runs / INDEX_NAME) as conn:
        conn.execute("UPDATE meta SET value = '0' WHERE key = 'version'")  # another version's
    assert list_runs(runs).total == 12
    with sqlite3.connect(runs / INDEX_NAME) as conn:
        version = conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()[0]
        assert version == str(SCHEMA_VERSION)


def test_a_runs_folder_that_cannot_be_written_is_listed_from_memory(tmp_path: Path) -> None:
    if os.geteuid() == 0:  # root writes anywhere: make the index path a folder instead
        runs = tmp_path / "runs"
        generate(runs, 5)
        (runs / INDEX_NAME).mkdir()
        (runs / INDEX_NAME / "x").write_text("keeps it from being removed")
    else:
        runs = tmp_path / "runs"
        generate(runs, 5)
        runs.chmod(0o555)
    try:
        assert list_runs(runs).total == 5
    finally:
        runs.chmod(0o755)


def test_filters(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    now = 1_800_000_000.0
    generate(runs, 40, now)
    waiting = list_runs(runs, status="waiting")
    assert {e.id for e in waiting} == {f"run-{i:06d}" for i in range(40) if i % 7 == 4}
    assert all(e.pending == 1 for e in waiting)
    both = list_runs(runs, status=["waiting", "failed"], workflow="research")
    assert {e.id for e in both} == {f"run-{i:06d}" for i in range(40) if i % 7 in (3, 4) and i % 4 == 0}
    assert ids(list_runs(runs, q="number 17")) == ["run-000017"]
    assert ids(list_runs(runs, q="100%")) == []  # LIKE's wildcards are plain text
    recent = list_runs(runs, since=now - 3 * 86400)
    assert recent.total == 4 and all(e.started is not None and e.started >= now - 3 * 86400 for e in recent)
    from datetime import datetime

    assert list_runs(runs, until=datetime.fromtimestamp(now - 27 * 86400)).total == 4
    assert ids(list_runs(runs, limit=2, offset=38)) == ["run-000001", "run-000000"]
    with pytest.raises(flowrun.UsageError):
        list_runs(runs, limit=-1)
    with pytest.raises(flowrun.UsageError):
        list_runs(runs, since="yesterday")  # type: ignore[arg-type]
    with pytest.raises(flowrun.RunError):
        list_runs(tmp_path / "missing")


def test_running_means_a_live_process_holds_the_lock(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    generate(runs, 3)
    folder = runs / "run-000001"
    meta = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps({**meta, "status": "running"}))
    lines = (folder / "events.jsonl").read_text().splitlines()
    (folder / "events.jsonl").write_text("\n".join(lines[:2]) + "\n" + lines[2][:20])  # no run_end, torn
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        (folder / "run.lock").write_text(f"{holder.pid}\n")
        entry = next(e for e in list_runs(runs) if e.id == "run-000001")
        assert entry.status == "running" and entry.ended is None
        listed = run_cli(["runs", "--runs-dir", str(runs)])
        line = next(x for x in listed.stdout.splitlines() if x.startswith("run-000001"))
        assert line.split()[2] == "running", line
    finally:
        holder.kill()
        holder.wait()
    entry = next(e for e in list_runs(runs) if e.id == "run-000001")  # its owner is gone
    assert entry.status == "interrupted" and entry.recorded_status == "running"
    listed = run_cli(["runs", "--runs-dir", str(runs)])
    line = next(x for x in listed.stdout.splitlines() if x.startswith("run-000001"))
    assert line.split()[2] == "interrupted", line  # the one name of flowrun/states.py
    (folder / "run.lock").unlink()
    with (folder / "events.jsonl").open("a") as f:  # the log grows: the running run is read again
        f.write(lines[2][20:] + "\n")
    assert next(e for e in list_runs(runs) if e.id == "run-000001").status == "completed"  # its run_end


def tiny_project(folder: Path) -> Path:
    """The tiny workflow and its writer in `folder`; its runs folder (made, empty)."""
    write_files(folder, {"agents.d/writer.yaml": WRITER, "wf.yaml": WORKFLOW})
    runs = folder / "runs"
    runs.mkdir()
    return runs


def test_the_runtime_updates_the_index_as_the_run_changes(tmp_path: Path) -> None:
    runs = tiny_project(tmp_path)
    assert list_runs(runs).total == 0  # the index now exists
    wf = flowrun.load(tmp_path / "wf.yaml")
    result = wf.run_sync({"topic": "x"}, dry_run=True, runs_dir=runs, run_id="one")
    assert result.status == "completed"
    with sqlite3.connect(runs / INDEX_NAME) as conn:  # before any listing: the run wrote its row
        row = conn.execute(
            "SELECT status, workflow, dry_run, total_tokens FROM runs WHERE name = 'one'"
        ).fetchone()
    usage = json.loads((runs / "one" / "usage.json").read_text())
    assert row == ("completed", "tiny", 1, usage["total_tokens"])
    started = time.time()
    entry = list_runs(runs).runs[0]
    assert entry.id == "one" and entry.inputs == {"topic": "x"} and entry.options["dry_run"] is True
    assert entry.started is not None and entry.started <= started


def test_the_first_run_of_a_runs_folder_makes_its_index(tmp_path: Path) -> None:
    """No listing before: the run makes the index and writes its row (the other folders' rows
    come with the next listing)."""
    runs = tiny_project(tmp_path)
    (runs / "stray").mkdir()  # a folder that is not a run's: listed as nothing, later
    wf = flowrun.load(tmp_path / "wf.yaml")
    assert wf.run_sync({"topic": "x"}, dry_run=True, runs_dir=runs, run_id="first").status == "completed"
    with sqlite3.connect(runs / INDEX_NAME) as conn:
        rows = conn.execute("SELECT name, status FROM runs").fetchall()
    assert rows == [("first", "completed")]
    assert [e.id for e in list_runs(runs)] == ["first"]


def test_a_locked_index_never_fails_a_run(tmp_path: Path) -> None:
    runs = tiny_project(tmp_path)
    list_runs(runs)
    blocker = sqlite3.connect(runs / INDEX_NAME, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # nobody else may write it now
    try:
        result = flowrun.load(tmp_path / "wf.yaml").run_sync({"topic": "x"}, dry_run=True, runs_dir=runs)
        assert result.status == "completed"
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert [e.status for e in list_runs(runs)] == ["completed"]  # the listing catches up


def test_flowrun_runs_filters_and_limits(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    generate(runs, 250, time.time())
    plain = run_cli(["runs", "--runs-dir", str(runs)])
    assert plain.returncode == 0, plain.stderr
    assert len(plain.stdout.splitlines()) == 201  # the header and the newest 200
    assert "the newest 200 of 250 runs; --limit 0 shows them all" in plain.stderr
    every = run_cli(["runs", "--runs-dir", str(runs), "--limit", "0"])
    assert len(every.stdout.splitlines()) == 251 and not every.stderr
    picked = run_cli(
        ["runs", "--runs-dir", str(runs), "--workflow", "triage", "--status", "waiting", "--since", "7d"]
    )
    lines = picked.stdout.splitlines()[1:]
    assert lines and all(" triage " in line and " waiting " in line for line in lines)
    found = run_cli(["runs", "--runs-dir", str(runs), "--search", "number 249"])
    assert [line.split()[0] for line in found.stdout.splitlines()[1:]] == ["run-000249"]
    bad = run_cli(["runs", "--runs-dir", str(runs), "--since", "someday"])
    assert bad.returncode == 2 and "neither a date nor a duration" in bad.stderr
    assert "Traceback" not in bad.stderr
    none = run_cli(["runs", "--runs-dir", str(runs), "--status", "running"])
    assert none.stdout.strip() == "no runs yet"


def test_runs_after_the_index_is_made_again_update_the_new_file(tmp_path: Path) -> None:
    """The runtime keeps its connection to the index open between runs; an index made again (a
    rebuild, another file) gets the next run's row, not the file it replaced."""
    runs = tiny_project(tmp_path)
    list_runs(runs)
    wf = flowrun.load(tmp_path / "wf.yaml")
    assert wf.run_sync({"topic": "x"}, dry_run=True, runs_dir=runs, run_id="one").status == "completed"
    for made_again in ("two", "three"):
        (runs / INDEX_NAME).unlink()
        for extra in runs.glob(INDEX_NAME + "-*"):  # its WAL files go with it
            extra.unlink()
        assert list_runs(runs).total >= 1  # made again from the folders
        result = wf.run_sync({"topic": "x"}, dry_run=True, runs_dir=runs, run_id=made_again)
        assert result.status == "completed"
        with sqlite3.connect(runs / INDEX_NAME) as conn:  # before any listing: the run wrote its row
            row = conn.execute("SELECT status FROM runs WHERE name = ?", (made_again,)).fetchone()
        assert row == ("completed",)
