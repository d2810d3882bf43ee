"""The sandbox, redaction and approvals through `flowrun` and the Python API: the start-up probe
(required fails closed before any model request; auto and dry runs warn), `--sandbox`, the
manifest keys at every level, `validate --explain`, secrets kept from the model, and human
approval of tool calls (no terminal, --yes, a callback, resume)."""

from __future__ import annotations

import base64
import json
import os
import pty
import select
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from support.cli import flowrun_cmd, run_cli
from support.env import WIRES, clean_env, model_env
from support.paths import REPO
from support.project import scripted_project
from support.runs import events
from support.wire_server import Reply, Script, ToolCallSpec, WireServer

import flowrun
from flowrun.events import ApprovalEvent, Event

KEY = "sk-wire-test-0123456789abcdefXYZ"  # the model's key, as the provider reads it


def shell(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "execute_shell", "arguments": {"command": command}}]}


def results(run_dir: Path, tool: str) -> list[dict[str, Any]]:
    return [e["result"] for e in events(run_dir) if e["type"] == "tool_result" and e["tool"] == tool]


# ---------------------------------------------------------------- the start-up probe


@pytest.mark.parametrize("provider", WIRES)
def test_required_fails_closed_before_any_model_request(tmp_path: Path, provider: str) -> None:
    script = Script({"worker": [Reply(tool_calls=[ToolCallSpec("execute_shell", {"command": "true"})])]})
    with WireServer(script) as server:
        env = {"FLOWRUN_BWRAP": str(tmp_path / "no-bwrap-here")}
        args = [
            str(REPO / "examples" / "instructor_worker.yaml"),
            "--task",
            "x",
            "--runs-dir",
            str(tmp_path / "runs"),
        ]
        env |= model_env(server, provider)
        if provider == "openai":
            args += ["--model", "openai:gpt-test"]
        proc = run_cli(args, cwd=tmp_path, env=env)
        assert server.requests == []
    assert proc.returncode == 5, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2 and proc.stdout == ""
    assert lines[0].startswith("error: the sandbox cannot start: ") and "no-bwrap-here" in lines[0]
    assert lines[1] == (
        "  hint: to run tools unconfined, set `sandbox: off` (or `sandbox: auto`) in the workflow, "
        "or run with --sandbox off"
    )
    assert not (tmp_path / "runs").exists()


def test_a_failing_bwrap_is_explained(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    scripted_project(
        tmp_path, {"boss": {"tools": ["execute_shell"]}}, {"boss": [shell("true")]}, task="do it"
    )
    proc = run_cli(["wf.yaml", "--run-id", "r"], cwd=tmp_path, env={"FLOWRUN_BWRAP": str(fake)})
    assert proc.returncode == 5
    assert "setting up uid map: Permission denied" in proc.stderr
    assert "likely cause" in proc.stderr and "user namespaces" in proc.stderr
    assert "--sandbox off" in proc.stderr and not (tmp_path / "runs").exists()


def test_dry_runs_and_every_roster_run_with_the_default_required(tmp_path: Path) -> None:
    for example in sorted((REPO / "examples").glob("*.yaml")):
        proc = run_cli([str(example), "--help"])
        inputs = [line.split()[0] for line in proc.stdout.splitlines() if line.endswith("(required)")]
        args = [
            str(example),
            "--dry-run",
            "-q",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--run-id",
            example.stem,
        ]
        for flag in inputs:
            args += [flag, "a question about sorting"]
        done = run_cli(args, cwd=tmp_path)
        assert done.returncode == 0, (example.name, done.stdout + done.stderr)
        assert "warning" not in done.stderr
        evs = events(tmp_path / "runs" / example.stem)
        assert not [e for e in evs if e["type"] == "sandbox_unavailable"]
        for e in evs:
            if e["type"] == "tool_result" and e["tool"] in ("execute_shell", "git"):
                assert (e["result"].get("error") or {}).get("code") != "SANDBOX_UNAVAILABLE"


def test_a_dry_run_warns_and_sandboxed_tools_answer_with_an_error(tmp_path: Path) -> None:
    example = REPO / "examples" / "research.yaml"
    proc = run_cli(
        [str(example), "--question", "sorting", "--dry-run", "--run-id", "d"],
        cwd=tmp_path,
        env={"FLOWRUN_BWRAP": str(tmp_path / "missing")},
    )
    assert proc.returncode == 0, proc.stderr
    assert "warning: the sandbox cannot start, the sandboxed tools answer SANDBOX_UNAVAILABLE" in proc.stderr
    run_dir = tmp_path / "runs" / "d"
    (unavailable,) = [e for e in events(run_dir) if e["type"] == "sandbox_unavailable"]
    assert unavailable["mode"] == "required" and unavailable["unconfined"] is False
    shell_results = results(run_dir, "execute_shell")
    assert shell_results and all(r["error"]["code"] == "SANDBOX_UNAVAILABLE" for r in shell_results)


def test_auto_runs_unconfined_with_a_warning_and_off_needs_no_probe(tmp_path: Path) -> None:
    (tmp_path / "beside.txt").write_text("outside the run folder\n")
    boss = {"tools": ["execute_shell"]}
    script = {"boss": [shell("cat ../../beside.txt"), {"text": "ok"}]}
    env = {"FLOWRUN_BWRAP": str(tmp_path / "missing")}
    scripted_project(tmp_path, {"boss": boss}, script, task="do it", sandbox="auto")
    proc = run_cli(["wf.yaml", "--run-id", "auto", "-q"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "warning: the sandbox cannot start, tools run UNCONFINED (sandbox: auto)" in proc.stderr
    run_dir = tmp_path / "runs" / "auto"
    assert [e["unconfined"] for e in events(run_dir) if e["type"] == "sandbox_unavailable"] == [True]
    assert "outside the run folder" in results(run_dir, "execute_shell")[0]["text"]
    # `--sandbox off` overrides the workflow: no probe, no warning
    scripted_project(tmp_path, {"boss": boss}, script, task="do it")
    proc = run_cli(["wf.yaml", "--run-id", "off", "-q", "--sandbox", "off"], cwd=tmp_path, env=env)
    assert proc.returncode == 0 and "warning" not in proc.stderr
    assert "outside the run folder" in results(tmp_path / "runs" / "off", "execute_shell")[0]["text"]


# ---------------------------------------------------------------- manifest keys


def test_keys_at_each_level_and_validate_explain(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "facts.txt").write_text("fact one\n")
    workflow = {"sandbox": {"ro_binds": ["data"]}}
    agents = {
        "boss": {
            "tools": [
                "execute_shell",
                {"helper": {"approve": "ask"}},
                {"git": {"sandbox": {"network": "allow"}}},
            ]
        },
        "helper": {"sandbox": "off", "tools": [{"execute_shell": {"sandbox": {"env": ["LANGUAGE"]}}}]},
    }
    script = {"boss": [shell(f"cat {data}/facts.txt; touch {data}/new.txt"), {"text": "ok"}]}
    scripted_project(tmp_path, agents, script, task="do it", **workflow)
    proc = run_cli(["validate", "--explain", "wf.yaml"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "workflow wf (wf.yaml):" in proc.stdout
    expected = [
        f"boss: sandbox required; network deny; read-only {data}",
        f"execute_shell: required; network deny; read-only {data}",
        f"git: required; network allow; read-only {data}",
        "helper: approve ask",
        "helper: sandbox off (unconfined)",
        "execute_shell: off (unconfined)",
    ]
    shown = [line.strip() for line in proc.stdout.splitlines()]
    for line in expected:
        assert line in shown, (line, proc.stdout)
    run = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    (result,) = results(tmp_path / "runs" / "r", "execute_shell")
    assert "fact one" in result["text"] and "Read-only file system" in result["text"]
    assert not (data / "new.txt").exists()


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"execute_shell": {"approve": "maybe"}}, "approve must be ask, always or never"),
        (
            {"execute_shell": {"sandbox": {"network": "sometimes"}}},
            "sandbox: Input should be 'deny' or 'allow'",
        ),
        ({"execute_shell": {"sandbox": "sometimes"}}, "sandbox must be required, auto, off or a mapping"),
        ({"execute_shell": {"sandbox": {"env": ["GITHUB_TOKEN"]}}}, "'GITHUB_TOKEN' looks like a secret"),
        (
            {"helper": {"sandbox": "off"}},
            "'helper' is an agent: its tools are confined by its own `sandbox:`",
        ),
    ],
)
def test_validate_rejects_bad_entry_keys(tmp_path: Path, entry: dict[str, Any], message: str) -> None:
    scripted_project(tmp_path, {"boss": {"tools": [entry]}, "helper": {}}, {"boss": []}, task="do it")
    proc = run_cli(["validate", "wf.yaml"], cwd=tmp_path)
    assert proc.returncode == 1 and message in proc.stdout, proc.stdout
    assert "agents.d/boss.yaml:" in proc.stdout


# ---------------------------------------------------------------- secrets


def test_no_form_of_a_key_reaches_the_model_or_the_log(tmp_path: Path) -> None:
    """A key that reached a workspace file (the environment never carries one into the sandbox):
    the shell's rev, base64 and hex of it never get to the model or into events.jsonl."""
    (tmp_path / "leak.txt").write_text(f"OPENAI_API_KEY={KEY}\n")
    commands = [
        "env",
        "cat leak.txt",
        "rev leak.txt",
        "base64 leak.txt",
        "xxd -p leak.txt",
        "od -A n -t x1 leak.txt",
    ]
    script = Script(
        {
            "boss": [
                Reply(tool_calls=[ToolCallSpec("execute_shell", {"command": c}) for c in commands]),
                Reply(text="ok"),
            ]
        }
    )
    workflow = {"workspace": {"copy": ["leak.txt"]}, "models": None, "default_model": "openai:gpt-test"}
    scripted_project(tmp_path, {"boss": {"tools": ["execute_shell"]}}, {}, task="do it", **workflow)
    with WireServer(script) as server:
        env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.openai_base_url}
        proc = run_cli(
            ["wf.yaml", "--run-id", "r", "-q", "--model", "openai:gpt-test"], cwd=tmp_path, env=env
        )
        requests = server.requests
    assert proc.returncode == 0, proc.stderr
    sent = json.dumps([r.body for r in requests])
    logged = (tmp_path / "runs" / "r" / "events.jsonl").read_text()
    forms = [KEY, KEY[::-1], KEY.encode().hex(), base64.b64encode(KEY.encode()).decode()[:20]]
    for text in (sent, logged):
        assert "[REDACTED]" in text
        for form in forms:
            assert form not in text
    evs = events(tmp_path / "runs" / "r")
    (env_call,) = [
        e["call_id"] for e in evs if e["type"] == "tool_call" and e["arguments"] == {"command": "env"}
    ]
    (env_out,) = [
        e["result"]["data"]["stdout"] for e in evs if e["type"] == "tool_result" and e["call_id"] == env_call
    ]
    assert "OPENAI_API_KEY" not in env_out  # `env` (the calls end in any order): not even the name


# ---------------------------------------------------------------- approvals


def approval_project(tmp: Path, approve: str) -> Path:
    boss = {"tools": [{"execute_shell": {"approve": approve}}]}
    script = {"boss": [shell("echo approved-and-ran > ran.txt"), {"text": "ok"}]}
    return scripted_project(tmp, {"boss": boss}, script, task="do it")


@pytest.mark.parametrize(
    ("approve", "flags", "ran", "by"),
    [
        ("ask", ["--decisions", "refuse"], False, "no terminal"),  # without it, the run waits
        ("ask", ["--yes"], True, "--yes"),
        ("never", ["--yes"], False, "policy"),
        ("always", [], True, None),
    ],
)
def test_approvals_on_the_command_line(
    tmp_path: Path, approve: str, flags: list[str], ran: bool, by: str | None
) -> None:
    approval_project(tmp_path, approve)
    proc = run_cli(["wf.yaml", "--run-id", "r", *flags], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp_path / "runs" / "r"
    assert (run_dir / "ran.txt").exists() is ran
    decisions = [(e["approved"], e["by"]) for e in events(run_dir) if e["type"] == "approval"]
    assert decisions == ([] if by is None else [(ran, by)])
    (result,) = results(run_dir, "execute_shell")
    if not ran:
        assert result["error"]["code"] == "NOT_APPROVED"
        assert ("--yes" in result["text"]) is (by == "no terminal")


async def test_the_api_callback_decides_and_resume_does_not_ask_again(tmp_path: Path) -> None:
    boss = {"tools": [{"execute_shell": {"approve": "ask"}}]}
    script = {"boss": [shell("echo first > one.txt"), shell("echo second > two.txt"), {"text": "ok"}]}
    scripted_project(tmp_path, {"boss": boss}, script, task="do it")
    asked: list[flowrun.ApprovalRequest] = []

    async def approve(request: flowrun.ApprovalRequest) -> bool:
        asked.append(request)
        return len(asked) == 1  # the first call yes, the second no

    seen: list[Event] = []
    wf = flowrun.load(tmp_path / "wf.yaml")
    result = await wf.run(run_dir=tmp_path / "r", approve=approve, on_event=seen.append)
    assert result.ok
    assert [(r.agent, r.tool, r.arguments["command"]) for r in asked] == [
        ("boss", "execute_shell", "echo first > one.txt"),
        ("boss", "execute_shell", "echo second > two.txt"),
    ]
    assert [(e.approved, e.by) for e in seen if isinstance(e, ApprovalEvent)] == [
        (True, "callback"),
        (False, "callback"),
    ]
    assert (tmp_path / "r" / "one.txt").exists() and not (tmp_path / "r" / "two.txt").exists()

    # a crash right after the first decision, before its tool ran: resume re-uses the decision
    run_dir = tmp_path / "r"
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    cut = next(i for i, line in enumerate(lines) if '"type": "approval"' in line) + 1
    (run_dir / "events.jsonl").write_text("\n".join(lines[:cut]) + "\n")
    (run_dir / "one.txt").unlink()
    (run_dir / "run.json").write_text(
        json.dumps({**json.loads((run_dir / "run.json").read_text()), "status": "running"})
    )

    asked.clear()
    again = await flowrun.resume(run_dir, approve=approve)
    assert again.ok and (run_dir / "one.txt").exists()
    assert [r.arguments["command"] for r in asked] == ["echo second > two.txt"]  # only the new call
    decisions = [(e["approved"], e["by"]) for e in events(run_dir) if e["type"] == "approval"]
    assert decisions == [(True, "callback"), (True, "callback")]  # the recorded one is not written twice


def test_api_sandbox_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWRUN_BWRAP", str(tmp_path / "missing"))
    scripted_project(
        tmp_path,
        {"boss": {"tools": ["execute_shell"]}},
        {"boss": [shell("echo hi"), {"text": "ok"}]},
        task="do it",
    )
    wf = flowrun.load(tmp_path / "wf.yaml")
    with pytest.raises(flowrun.SandboxError, match="the sandbox cannot start"):
        wf.run_sync(run_dir=tmp_path / "a")
    assert not (tmp_path / "a").exists()
    result = wf.run_sync(run_dir=tmp_path / "b", sandbox="off")
    assert result.ok and results(tmp_path / "b", "execute_shell")[0]["text"] == "hi"
    with pytest.raises(flowrun.UsageError, match="unknown sandbox mode"):
        wf.run_sync(run_dir=tmp_path / "c", sandbox="sometimes")


@pytest.mark.parametrize(("answer", "ran"), [("y", True), ("n", False)])
def test_approval_on_a_terminal(tmp_path: Path, answer: str, ran: bool) -> None:
    """A pseudo-terminal: the question appears (the live panel stepped aside), the answer decides."""
    approval_project(tmp_path, "ask")
    controller, terminal = pty.openpty()
    env = clean_env()
    proc = subprocess.Popen(
        [*flowrun_cmd(), "wf.yaml", "--run-id", "r"],
        cwd=tmp_path,
        env={**env, "COLUMNS": "100", "TERM": "xterm"},
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
    )
    os.close(terminal)
    seen = b""
    try:
        deadline = time.monotonic() + 120
        while b"allow it? [y/N/later]" not in seen and time.monotonic() < deadline:
            if select.select([controller], [], [], 1.0)[0]:  # a hang fails at the deadline, never blocks
                seen += os.read(controller, 4096)
        assert b"boss wants to call execute_shell(command='echo approved-and-ran > ran.txt')" in seen, seen
        os.write(controller, f"{answer}\n".encode())
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                seen += os.read(controller, 4096)
            except OSError:  # the other side closed
                break
        assert proc.wait(30) == 0, seen
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(controller)
    run_dir = tmp_path / "runs" / "r"
    assert (run_dir / "ran.txt").exists() is ran
    assert [(e["approved"], e["by"]) for e in events(run_dir) if e["type"] == "approval"] == [(ran, "user")]


def test_the_engine_files_of_a_real_run_are_read_only_inside(tmp_path: Path) -> None:
    names = ["events.jsonl", "run.json", "usage.json", "flowrun.log"]
    command = (
        "for f in " + " ".join(names) + "; do echo forged >> $f && echo WROTE $f; done; echo ok > mine.txt"
    )
    scripted_project(
        tmp_path,
        {"boss": {"tools": ["execute_shell"]}},
        {"boss": [shell(command), {"text": "ok"}]},
        task="do it",
    )
    proc = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp_path / "runs" / "r"
    (result,) = results(run_dir, "execute_shell")
    assert "WROTE" not in result["text"] and result["text"].count("Read-only file system") == 4
    assert (run_dir / "mine.txt").read_text() == "ok\n"
    for name in names:  # a forged line would be the word alone
        assert "forged" not in (run_dir / name).read_text().splitlines(), name
