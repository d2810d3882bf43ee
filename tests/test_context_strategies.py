"""Context strategies through the CLI: `compact` summarises older turns into a workspace file;
`dashboard` resets the history to the dashboards after update_dashboard."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.cli import run_cli
from support.project import SCRIPTED, scripted_project
from support.runs import events


def worker_project(tmp: Path, agent: dict[str, Any], replies: dict[str, Any], model: dict[str, Any]) -> None:
    big = {"files": {"big.txt": "lorem ipsum dolor sit amet " * 200}}
    agents = {"worker": {"prompt": "You work.", **agent}}
    models = {"m": {**SCRIPTED, **model}}
    scripted_project(tmp, agents, replies, entry="worker", workspace=big, models=models)


def test_compact_replaces_older_turns_with_a_summary_and_a_file(tmp_path: Path) -> None:
    reads = [{"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]} for _ in range(6)]
    replies = {
        "worker": [*reads, {"text": "done"}],
        "worker#compact": [{"text": "Read big.txt six times; it is lorem ipsum."}] * 5,
    }
    agent = {
        "tools": ["read_file"],
        "context": {"strategy": "compact", "compact_at": 0.5, "keep_recent": 2},
        "max_repeated_calls": 10,  # the same read six times is the point here, not a loop
    }
    worker_project(tmp_path, agent, replies, {"context_window": 4000})
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
    worker_project(tmp_path, agent, replies, {})
    proc = run_cli(["wf.yaml", "--run-id", "r"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = tmp_path / "runs" / "r"
    evs = events(run_dir)
    assert any(e["type"] == "context_reset" for e in evs)
    sizes = [e["messages"] for e in evs if e["type"] == "model_request"]
    assert sizes[3] < sizes[2]  # after the reset: the task with the dashboard, nothing else
    assert (run_dir / "overall.md").read_text().startswith("# Plan")
