"""MCP protocol revisions, both ways: flowrun's client asks for the current revision (the mcp
SDK's latest, 2026-07-28 with mcp 2.x), introduces itself as flowrun and its version, and still
works with a server that answers with an earlier revision (tests/mcp_old_server.py, raw JSON-RPC);
`flowrun serve mcp` answers a client of an earlier revision in that revision, and a current one
in the current."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import httpx
import mcp.types
import pytest
import yaml
from support.cli import popen_cli, run_cli
from support.paths import TESTS

import flowrun
from flowrun.foreign_text import inner

OLD = "2025-06-18"
assert mcp.types.LATEST_PROTOCOL_VERSION >= "2026-07-28", "the mcp SDK of the current revision (mcp>=2.3)"


def project(root: Path, revision: str) -> None:
    shutil.copy(TESTS / "mcp_old_server.py", root / "mcp_old_server.py")
    server = {
        "command": sys.executable,
        "args": ["mcp_old_server.py", "--revision", revision, "--record", "rec.json"],
    }
    replies = {
        "boss": [
            {"text": "", "tool_calls": [{"name": "old__echo", "arguments": {"text": "hi"}}]},
            {"text": "done"},
        ]
    }
    workflow = {
        "version": 1,
        "kind": "workflow",
        "name": "old",
        "models": {"s": {"provider": "scripted", "model": "s", "script": "s.yaml"}},
        "default_model": "s",
        "entry": "boss",
        "task": "Echo.",
        "mcp_servers": {"old": server},
    }
    (root / "agents.d").mkdir()
    agent = {"version": 1, "kind": "agent", "name": "boss", "prompt": "You echo.", "tools": ["old"]}
    (root / "agents.d" / "boss.yaml").write_text(yaml.safe_dump(agent))
    (root / "s.yaml").write_text(yaml.safe_dump({"version": 1, "kind": "script", "agents": replies}))
    (root / "wf.yaml").write_text(yaml.safe_dump(workflow))


@pytest.mark.parametrize("revision", [OLD, "2025-03-26"])
def test_the_client_asks_for_the_current_revision_and_talks_to_older_servers(
    tmp_path: Path, revision: str
) -> None:
    project(tmp_path, revision)
    done = run_cli(["wf.yaml", "--run-id", "r", "-q", "--sandbox", "off"], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [json.loads(line) for line in (tmp_path / "runs" / "r" / "events.jsonl").read_text().splitlines()]
    (result,) = [e["result"] for e in lines if e["type"] == "tool_result"]
    assert result["status"] == "success" and inner(result["text"]) == f"echo ({revision}): hi", result
    sent = [json.loads(line) for line in next(tmp_path.rglob("rec.json")).read_text().splitlines()]
    # first the current revision's discovery; refused, the earlier revisions' handshake
    discover, hello = sent[0], sent[1]
    meta = discover["params"]["_meta"]
    assert discover["method"] == "server/discover"
    assert meta["io.modelcontextprotocol/protocolVersion"] == mcp.types.LATEST_PROTOCOL_VERSION
    assert hello["method"] == "initialize"
    me = {"name": "flowrun", "version": flowrun.__version__}
    assert meta["io.modelcontextprotocol/clientInfo"] == hello["params"]["clientInfo"] == me


def initialize(url: str, revision: str) -> dict[str, Any]:
    """A client of `revision`'s first request, over streamable HTTP: the server's answer."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": revision,
            "capabilities": {},
            "clientInfo": {"name": "old", "version": "1"},
        },
    }
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    response = httpx.post(url, json=body, headers=headers, timeout=60)
    assert response.status_code == 200, response.text
    text = response.text
    if "text/event-stream" in response.headers.get("content-type", ""):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:") and line[5:].strip())
    answer: dict[str, Any] = json.loads(text)
    return answer


async def current_client(url: str) -> str:
    """The revision the mcp SDK's own client (the current one) settles on with the server."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with Client(streamable_http_client(url)) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["wf"]
        return str(client.protocol_version)


def test_serve_mcp_answers_each_client_in_its_revision(tmp_path: Path) -> None:
    (tmp_path / "agents.d").mkdir()
    (tmp_path / "agents.d" / "w.yaml").write_text(
        "version: 1\nkind: agent\nname: w\nprompt: Write.\ntools: []\n"
    )
    (tmp_path / "wf.yaml").write_text(
        "version: 1\nkind: workflow\nname: wf\ndescription: A test.\n"
        "models: {m: {provider: test, model: t}}\ndefault_model: m\nentry: w\ntask: Go.\n"
    )
    proc = popen_cli(["serve", "mcp", "wf.yaml", "--http", "0", "--dry-run"], tmp_path)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("serving MCP at http://127.0.0.1:"), line
        url = line.split()[-1]
        for revision in ("2025-03-26", OLD):
            result = initialize(url, revision)["result"]
            assert result["protocolVersion"] == revision
            assert result["serverInfo"]["name"] == "flowrun"
        assert asyncio.run(asyncio.wait_for(current_client(url), 120)) == mcp.types.LATEST_PROTOCOL_VERSION
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
