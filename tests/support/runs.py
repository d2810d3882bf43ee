"""Reading a run folder back: its events, its run.json, and the check every run folder must
pass (a strictly parseable log whose attempts each end once)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any


def folders(runs_dir: Path) -> list[Path]:
    """The run folders of a runs folder (not its `.index.sqlite`, which a run makes)."""
    return sorted(p for p in runs_dir.iterdir() if p.is_dir())


def events(run_dir: Path) -> list[dict[str, Any]]:
    """Every event of the run's log, in order."""
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def meta(run_dir: Path) -> dict[str, Any]:
    """The run's run.json."""
    data: dict[str, Any] = json.loads((run_dir / "run.json").read_text())
    return data


def status_of(run_dir: Path) -> str:
    return str(meta(run_dir)["status"])


def log_lines(run_dir: Path) -> list[dict[str, Any]]:
    """Every line of events.jsonl, each of which must be a JSON object (no tolerance here)."""
    out = []
    for number, line in enumerate((run_dir / "events.jsonl").read_bytes().split(b"\n")[:-1], 1):
        raw = json.loads(line)
        assert isinstance(raw, dict), f"line {number} is not an object"
        out.append(raw)
    assert (run_dir / "events.jsonl").read_bytes().endswith(b"\n"), "the log ends in a torn line"
    return out


def check_log(run_dir: Path, *, ended: bool = True) -> list[dict[str, Any]]:
    """The invariants of every run folder: each line parses, `seq` counts up without a
    duplicate, each attempt (split at `run_resumed`) has at most one `run_end` and it is that
    attempt's last event; `ended`: the log ends with a `run_end` whose status is run.json's."""
    events = log_lines(run_dir)
    seqs = [e["seq"] for e in events]
    assert len(seqs) == len(set(seqs)), f"duplicated seq: {seqs}"
    assert seqs == sorted(seqs), f"seq out of order: {seqs}"
    attempt: list[dict[str, Any]] = []
    for event in [*events, {"type": "run_resumed"}]:
        if event["type"] == "run_resumed":
            ends = [i for i, e in enumerate(attempt) if e["type"] == "run_end"]
            assert len(ends) <= 1, "two run_end events in one attempt"
            assert not ends or ends[0] == len(attempt) - 1, "events after run_end"
            attempt = []
        attempt.append(event)
    starts = [e for e in events if e["type"] == "run_start"]
    assert len(starts) == 1, f"{len(starts)} run_start events"
    if ended:
        assert events[-1]["type"] == "run_end"
        assert meta(run_dir)["status"] == events[-1]["status"]
    return events


def no_traceback(proc: subprocess.CompletedProcess[str] | tuple[str, str]) -> str:
    """The command's output (stdout then stderr), which holds no traceback."""
    out = proc.stdout + proc.stderr if isinstance(proc, subprocess.CompletedProcess) else "".join(proc)
    assert "Traceback" not in out and "internal error" not in out, out
    return out


def live_events(run_dir: Path) -> list[dict[str, Any]]:
    """The whole lines of a log still being written (or cut by a kill, which may tear the last
    one); none before the log exists."""
    log = run_dir / "events.jsonl"
    found = []
    for line in log.read_text().splitlines() if log.is_file() else []:
        try:
            found.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return found
