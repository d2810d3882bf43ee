"""`flowrun serve mcp`: a workflow served as an MCP tool and called with the `mcp` client over
stdio and streamable HTTP: its inputs are the parameters, progress arrives while it runs, the
output and the run folder come back, and the run folder is a normal, complete run."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from conftest import SECRET_VARS, flowrun_cmd
from mcp import Client, StdioServerParameters

WORKFLOW = """version: 1
kind: workflow
name: summarize
description: Summarize a topic into a short report.
inputs:
  topic: {description: What to summarize.}
  depth: {type: integer, default: 2, description: How deep to go.}
  style: {choices: [brief, full], default: brief}
models: {m: {provider: test, model: t}}
default_model: m
entry: writer
output: report.md
"""
WRITER = """version: 1
kind: agent
name: writer
prompt: Write the report.
tools: [write_file, read_file]
"""


def project(tmp_path: Path) -> Path:
    (tmp_path / "agents.d").mkdir()
    (tmp_path / "agents.d" / "writer.yaml").write_text(WRITER)
    path = tmp_path / "summarize.yaml"
    path.write_text(WORKFLOW)
    return path


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in SECRET_VARS}


async def exercise(client: Client) -> dict[str, Any]:
    listed = await client.list_tools()
    (tool,) = listed.tools
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    result = await client.call_tool(
        "summarize", {"topic": "sorting", "depth": 3}, progress_callback=on_progress
    )
    bad = await client.call_tool("summarize", {"depth": 1})
    return {"tool": tool, "result": result, "progress": progress, "bad": bad}


def check(found: dict[str, Any], runs: Path) -> None:
    tool = found["tool"]
    assert tool.name == "summarize"
    assert "Summarize a topic" in (tool.description or "")
    schema = tool.input_schema
    assert schema["required"] == ["topic"]
    assert schema["properties"]["depth"] == {
        "type": "integer",
        "default": 2,
        "description": "How deep to go.",
    }
    assert schema["properties"]["style"]["enum"] == ["brief", "full"]
    result = found["result"]
    assert not result.is_error
    text = result.content[0].text
    structured = result.structured_content
    run_dir = Path(structured["run_dir"])
    assert structured["status"] == "completed" and structured["exit_code"] == 0
    assert run_dir.parent == runs.resolve()
    assert f"run folder: {run_dir}" in text
    report = (run_dir / "report.md").read_text()
    assert report and report.strip() in text  # the declared output's content is the result
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "completed" and meta["inputs"] == {
        "topic": "sorting",
        "depth": 3,
        "style": "brief",
    }
    assert any("writer started" in p for p in found["progress"])
    assert any("writer → write_file" in p for p in found["progress"])
    bad = found["bad"]
    assert bad.is_error and "topic" in bad.content[0].text


def test_serve_over_stdio(tmp_path: Path) -> None:
    workflow = project(tmp_path)
    runs = tmp_path / "runs"
    command, *args = flowrun_cmd()
    params = StdioServerParameters(
        command=command,
        args=[*args, "serve", "mcp", str(workflow), "--dry-run", "--runs-dir", str(runs)],
        env=env(),
        cwd=tmp_path,
    )

    async def main() -> dict[str, Any]:
        async with Client(params) as client:
            return await exercise(client)

    check(asyncio.run(asyncio.wait_for(main(), 120)), runs)


def test_serve_over_http(tmp_path: Path) -> None:
    workflow = project(tmp_path)
    runs = tmp_path / "runs"
    with subprocess.Popen(
        [*flowrun_cmd(), "serve", "mcp", str(workflow), "--http", "0", "--dry-run", "--runs-dir", str(runs)],
        cwd=tmp_path,
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        serve_and_call(proc, runs)


def serve_and_call(proc: subprocess.Popen[str], runs: Path) -> None:
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("serving MCP at http://127.0.0.1:"), line
        url = line.split()[-1]

        async def main() -> dict[str, Any]:
            async with Client(url) as client:
                return await exercise(client)

        check(asyncio.run(asyncio.wait_for(main(), 120)), runs)
    finally:
        proc.terminate()
        proc.wait(timeout=120)


def test_serve_reports_a_broken_workflow_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(WORKFLOW.replace("entry: writer", "entry: nobody"))
    proc = subprocess.run(
        [*flowrun_cmd(), "serve", "mcp", str(tmp_path / "bad.yaml")],
        capture_output=True,
        text=True,
        env=env(),
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "unknown agent 'nobody'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
