"""A dry run touches nothing real: of a real MCP server's tools it calls only those the server
annotates read-only (`readOnlyHint`); every other call is answered from the tool's schemas
without reaching the server, and the run still completes."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from support.cli import run_cli
from support.env import model_env
from support.paths import TESTS
from support.project import write_files
from support.wire_server import Reply, Script, ToolCallSpec, WireServer

from flowrun.foreign_text import frame

WORKFLOW = {
    "version": 1,
    "kind": "workflow",
    "name": "dry_mcp",
    "inputs": {"question": {}},
    "models": {"m": {"provider": "anthropic", "model": "claude-test", "api_key_env": "ANTHROPIC_API_KEY"}},
    "default_model": "m",
    "entry": "worker",
    "mcp_servers": {
        # unconfined, as a user's own server would touch their files
        "calc": {"command": sys.executable, "args": ["mcp_test_server.py"], "sandbox": "off"}
    },
}
AGENT = {
    "version": 1,
    "kind": "agent",
    "name": "worker",
    "prompt": "Use the tools.",
    "tools": ["calc.lookup", "calc.record", "calc.report"],
}


def results_by_tool(run_dir: Path) -> dict[str, dict[str, Any]]:
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    return {e["tool"]: e["result"] for e in events if e["type"] == "tool_result"}


def test_dry_run_calls_only_read_only_mcp_tools(tmp_path: Path) -> None:
    shutil.copy(TESTS / "mcp_test_server.py", tmp_path / "mcp_test_server.py")
    write_files(tmp_path, {"agents.d/worker.yaml": AGENT, "dry_mcp.yaml": WORKFLOW})
    runs = tmp_path / "runs"
    proc = run_cli(
        ["dry_mcp.yaml", "--question", "q", "--dry-run", "--runs-dir", str(runs), "--run-id", "d1"],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = results_by_tool(runs / "d1")
    assert set(results) == {"calc__lookup", "calc__record", "calc__report"}
    # read-only: really called (the server's own answer, framed as data naming it)
    assert results["calc__lookup"]["text"] == frame("value of dry-run", "MCP server 'calc', tool 'lookup'")
    assert not results["calc__lookup"]["data"].get("simulated")
    # not annotated read-only: answered without the server, its effect never happened
    assert results["calc__record"]["data"]["simulated"] is True
    assert "was not run" in results["calc__record"]["text"]
    assert not (tmp_path / "calls.log").exists()
    # a tool with an output schema gets a result of that shape
    report = results["calc__report"]
    assert report["data"]["simulated"] is True and isinstance(report["data"]["structured"], dict)

    # a real run that calls `record` does reach the server (so the check above can fail)
    script = Script(
        {
            "Use the tools": [
                Reply(tool_calls=[ToolCallSpec("calc__record", {"text": "hi"})]),
                Reply(text="ok"),
            ]
        }
    )
    with WireServer(script) as server:
        env = model_env(server, "anthropic")
        args = ["dry_mcp.yaml", "--question", "q", "--runs-dir", str(runs), "--run-id", "r1"]
        proc = run_cli(args, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "calls.log").read_text() == "hi\n"
