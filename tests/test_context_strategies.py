"""Context strategies through the CLI: `compact` summarises older turns into a workspace file;
`dashboard` resets the history to the dashboards after update_dashboard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from conftest import run_cli


def write_project(
    tmp: Path, agent: dict[str, Any], replies: dict[str, list[dict[str, Any]]], model: dict[str, Any]
) -> None:
    workflow = {
        "version": 1,
        "kind": "workflow",
        "name": "c",
        "models": {"m": {"provider": "scripted", "model": "m", "script": "script.yaml", **model}},
        "default_model": "m",
        "entry": "worker",
        "workspace": {"files": {"big.txt": "lorem ipsum dolor sit amet " * 200}},
    }
    (tmp / "agents.d").mkdir()
    (tmp / "wf.yaml").write_text(yaml.safe_dump(workflow))
    base = {"version": 1, "kind": "agent", "name": "worker", "prompt": "You work."}
    (tmp / "agents.d" / "worker.yaml").write_text(yaml.safe_dump({**base, **agent}))
    (tmp / "script.yaml").write_text(yaml.safe_dump({"version": 1, "kind": "script", "agents": replies}))


def events(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def test_compact_replaces_older_turns_with_a_summary_and_a_file(tmp_path: Path) -> None:
    reads = [{"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]} for _ in range(6)]
    replies = {
        "worker": [*reads, {"text": "done"}],
        "worker#compact": [{"text": "Read big.txt six times; it is lorem ipsum."}] * 5,
    }
    agent = {"tools": ["read_file"], "context": {"strategy": "compact", "compact_at": 0.5, "keep_recent": 2}}
    agent["max_repeated_calls"] = 10  # six reads of one file on purpose: the loop guard lets them run
    write_project(tmp_path, agent, replies, {"context_window": 4000})
    proc = run_cli(["wf.yaml", "--run-id", "r"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = tmp_path / "runs" / "r"
    evs = events(run_dir)
    compactions = [e for e in evs if e["type"] == "context_compacted"]
    assert compactions
    first = compactions[0]
    assert first["messages_after"] < first["messages_before"]
    assert "lorem ipsum" in (run_dir / first["transcript"]).read_text()
    # without compaction the history would grow to 13 messages; with it, it stays small
    requests = [e for e in evs if e["type"] == "model_request" and not e.get("purpose")]
    sizes = [e["messages"] for e in requests]
    assert len(sizes) == 7 and max(sizes) <= 5
    # the agent's next request starts from the task and the compaction note
    assert any(e.get("purpose") == "compact" for e in evs if e["type"] == "model_request")


def test_dashboard_update_resets_history(tmp_path: Path) -> None:
    replies = {
        "worker": [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]},
            {
                "tool_calls": [
                    {
                        "name": "update_dashboard",
                        "arguments": {"name": "overall", "content": "# Plan\nread twice"},
                    }
                ]
            },
            {"tool_calls": [{"name": "finish", "arguments": {"result": "ok"}}]},
        ]
    }
    agent = {
        "tools": ["read_file", "update_dashboard", "finish"],
        "context": {"strategy": "dashboard", "dashboards": {"overall": "overall.md"}},
    }
    write_project(tmp_path, agent, replies, {})
    proc = run_cli(["wf.yaml", "--run-id", "r"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = tmp_path / "runs" / "r"
    evs = events(run_dir)
    assert any(e["type"] == "context_reset" for e in evs)
    sizes = [e["messages"] for e in evs if e["type"] == "model_request"]
    assert sizes[3] < sizes[2]  # after the reset: the task with the dashboard, nothing else
    assert (run_dir / "overall.md").read_text().startswith("# Plan")
