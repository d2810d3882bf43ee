"""What the hardening tests share: small scripted projects written to a folder, the CLI run in
a subprocess, and the check every run folder must pass (a strictly parseable log)."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import yaml
from conftest import SECRET_VARS, flowrun_cmd


def scripted_project(
    tmp: Path,
    agents: dict[str, dict[str, Any]],
    replies: dict[str, list[dict[str, Any]]],
    *,
    entry: str = "boss",
    limits: dict[str, Any] | None = None,
    inputs: dict[str, Any] | None = None,
    extra: dict[str, str] | None = None,
    workflow: dict[str, Any] | None = None,
) -> Path:
    """A workflow `wf.yaml` on the scripted provider, one agents.d file per agent."""
    spec: dict[str, Any] = {
        "version": 1,
        "kind": "workflow",
        "name": "hard",
        "models": {"s": {"provider": "scripted", "model": "s", "script": "script.yaml"}},
        "default_model": "s",
        "entry": entry,
        **(workflow or {}),
    }
    if limits:
        spec["limits"] = limits
    if inputs:
        spec["inputs"] = inputs
    files = {
        "wf.yaml": yaml.safe_dump(spec),
        "script.yaml": yaml.safe_dump({"version": 1, "kind": "script", "agents": replies}),
        **{
            f"agents.d/{name}.yaml": yaml.safe_dump({"version": 1, "kind": "agent", "name": name, **body})
            for name, body in agents.items()
        },
        **(extra or {}),
    }
    for rel, text in files.items():
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return tmp


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SECRET_VARS}
    env["FLOWRUN_RETRY_BASE_S"] = "0.01"
    env.update(extra or {})
    return env


def start_cli(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, stdin: int | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*flowrun_cmd(), *args],
        cwd=cwd,
        env=cli_env(env),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


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
        meta = json.loads((run_dir / "run.json").read_text())
        assert meta["status"] == events[-1]["status"]
    return events


def status_of(run_dir: Path) -> str:
    return str(json.loads((run_dir / "run.json").read_text())["status"])


def no_traceback(proc: subprocess.CompletedProcess[str] | tuple[str, str]) -> str:
    out = proc.stdout + proc.stderr if isinstance(proc, subprocess.CompletedProcess) else "".join(proc)
    assert "Traceback" not in out and "internal error" not in out, out
    return out


def no_root_file_powers() -> None:
    """For a child's preexec_fn: file permissions hold for it even when the tests run as root
    (CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH leave its bounding set, so the exec'd program
    does not get them)."""
    if os.geteuid() != 0:
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    pr_capbset_drop, cap_dac_override, cap_dac_read_search = 24, 1, 2
    for cap in (cap_dac_override, cap_dac_read_search):
        if libc.prctl(pr_capbset_drop, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def run_unprivileged(
    args: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI with file permissions enforced (see no_root_file_powers)."""
    return subprocess.run(
        [*flowrun_cmd(), *args],
        cwd=cwd,
        env=cli_env(env),
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=no_root_file_powers,
    )
