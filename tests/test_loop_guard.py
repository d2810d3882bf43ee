"""The loop guard through `flowrun run`, with the real SDKs against the scripted server in both
wire formats: the same tool call (same arguments) N times in a row is refused with a
REPEATED_CALL error at N and stops the agent at N+1 (an event each); a stopped sub-agent is a
partial result for its caller; the limit comes from `limits.max_repeated_calls` or the agent's
own; replay and resume rebuild the guard from the log and fire at the same calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli
from support.env import WIRES, model_env
from support.project import model, who, workflow, write_project
from support.runs import events
from support.wire_server import Reply, ToolCallSpec, WireRequest, WireServer

SAME = ToolCallSpec("read_file", {"path": "notes.md"})


def make_project(tmp: Path, provider: str, entry: str = "looper", **extra: Any) -> None:
    limits = extra.pop("limits", None)
    notes = {"files": {"notes.md": "nothing new\n"}}
    spec = workflow(
        model(provider), name="loops", entry=entry, task="Read the notes.", workspace=notes, limits=limits
    )
    agents = {"looper": {"tools": ["read_file"], **extra}, "boss": ["looper"]}
    write_project(tmp, spec, agents, name="loops.yaml")


def responder(request: WireRequest) -> Reply:
    if who(request) == "boss":
        if request.assistant_turns == 0:
            return Reply(tool_calls=[ToolCallSpec("looper", {"task": "Read the notes."})])
        return Reply(text="The looper got stuck; done.")
    return Reply(tool_calls=[SAME])  # the looper never stops asking for the same file


def looper_results(evs: list[dict[str, Any]]) -> list[str]:
    return [
        (e["result"].get("error") or {}).get("code") or e["result"]["status"]
        for e in evs
        if e["type"] == "tool_result" and e["agent"] == "looper"
    ]


def guard_events(evs: list[dict[str, Any]]) -> list[tuple[str, int, int]]:
    return [(e["action"], e["count"], e["limit"]) for e in evs if e["type"] == "repeated_call"]


@pytest.mark.parametrize("provider", WIRES)
def test_the_guard_refuses_at_the_limit_and_stops_at_the_next(tmp_path: Path, provider: str) -> None:
    make_project(tmp_path, provider)
    with WireServer(responder) as server:
        proc = run_cli(["loops.yaml", "--run-id", "r"], cwd=tmp_path, env=model_env(server, provider))
        asked = len(server.requests)
    run_dir = tmp_path / "runs" / "r"
    evs = events(run_dir)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "agent 'looper' was stopped: it called read_file with the same arguments 6 times in a row" in (
        proc.stdout + proc.stderr
    )
    assert asked == 6  # four calls ran, the fifth was refused, the sixth stopped the agent
    assert looper_results(evs) == ["success"] * 4 + ["REPEATED_CALL"]
    refused = [e for e in evs if e["type"] == "tool_result" and e["agent"] == "looper"][-1]["result"]
    assert "5th call in a row with the same arguments" in refused["text"]
    assert guard_events(evs) == [("refused", 5, 5), ("stopped", 6, 5)]
    end = [e for e in evs if e["type"] == "agent_end"][-1]
    assert end["agent"] == "looper" and end["status"] == "repeated_call"
    assert evs[-1]["type"] == "run_end" and evs[-1]["status"] == "failed"

    # a replay gives the agent the recorded answers: the guard fires at the same calls
    again = run_cli(["replay", str(run_dir), "--into", str(tmp_path / "again"), "-q"], cwd=tmp_path)
    replayed = events(tmp_path / "again")
    assert guard_events(replayed) == guard_events(evs), again.stdout + again.stderr
    assert looper_results(replayed) == looper_results(evs)


@pytest.mark.parametrize("provider", WIRES)
def test_a_stopped_sub_agent_is_a_partial_result_and_the_run_goes_on(tmp_path: Path, provider: str) -> None:
    make_project(tmp_path, provider, entry="boss", max_repeated_calls=3)  # the agent's own limit
    with WireServer(responder) as server:
        proc = run_cli(["loops.yaml", "--run-id", "r"], cwd=tmp_path, env=model_env(server, provider))
    evs = events(tmp_path / "runs" / "r")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert guard_events(evs) == [("refused", 3, 3), ("stopped", 4, 3)]
    (got,) = [e["result"] for e in evs if e["type"] == "tool_result" and e["tool"] == "looper"]
    assert got["status"] == "partial" and got["data"]["outcome"] == "repeated_call"
    assert "agent 'looper' was stopped" in got["text"]
    assert evs[-1]["status"] == "completed"


def test_the_workflow_limit_applies_and_resume_keeps_the_guard(tmp_path: Path) -> None:
    make_project(tmp_path, "openai", limits={"max_repeated_calls": 2})
    with WireServer(responder) as server:
        env = model_env(server, "openai")
        proc = run_cli(["loops.yaml", "--run-id", "r"], cwd=tmp_path, env=env)
        assert proc.returncode == 1 and len(server.requests) == 3
        first = events(tmp_path / "runs" / "r")
        assert guard_events(first) == [("refused", 2, 2), ("stopped", 3, 2)]
        # resuming gives the agent its recorded answers again: the guard, rebuilt from them,
        # stops it at the same call without asking the model anything new
        resumed = run_cli(["resume", "runs/r", "-q"], cwd=tmp_path, env=env)
        assert len(server.requests) == 3, resumed.stdout + resumed.stderr
    after = events(tmp_path / "runs" / "r")
    assert guard_events(after) == guard_events(first)  # logged once, not again
    assert after[-1]["type"] == "run_end" and after[-1]["status"] == "failed"
    assert "was stopped" in resumed.stdout + resumed.stderr


def test_validate_checks_the_limit(tmp_path: Path) -> None:
    make_project(tmp_path, "openai", limits={"max_repeated_calls": 1})
    proc = run_cli(["validate", "loops.yaml"], cwd=tmp_path)
    assert proc.returncode == 1 and "max_repeated_calls" in proc.stdout
