"""An MCP server's resources read by an agent (`SERVER__list_resources`,
`SERVER__read_resource`) and an MCP prompt used as an agent's system prompt, with the real test
server (tests/mcp_test_server.py) and the scripted model server; and `validate` on the new keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from support.env import WIRES
from support.runs import events as events_of
from support.wire_server import Reply, Script, WireServer, call
from test_mcp_client import WORKER, mcp_project, stdio_server, validate
from test_mcp_defer import run

from flowrun.foreign_text import NOTE, frame, inner


@pytest.mark.parametrize("provider", WIRES)
def test_an_agent_lists_and_reads_a_servers_resources(tmp_path: Path, provider: str) -> None:
    workflow = mcp_project(tmp_path, {"notes": stdio_server("resources")}, ["notes"])
    replies = [
        Reply(tool_calls=[call("notes__list_resources")]),
        Reply(
            tool_calls=[
                call("notes__read_resource", uri="notes://guide"),
                call("notes__read_resource", uri="notes://day/monday"),
                call("notes__read_resource", uri="notes://nothing-here"),
            ]
        ),
        Reply(text="All done."),
    ]
    with WireServer(Script({WORKER: replies})) as server:
        code, out, run_dir = run(tmp_path, workflow, server, provider)
        requests = server.requests
    assert code == 0, out
    assert {"notes__list_resources", "notes__read_resource", "notes__add"} <= set(requests[0].tool_names)
    listing = requests[1].tool_results[-1][1]
    assert "notes://guide" in listing and "The team's guide." in listing
    assert "<foreign-text source=\"MCP server 'notes', its list of resources\"" in listing
    assert "notes://day/{day} (a template" in listing
    texts = [text for _, text, _ in requests[2].tool_results[-3:]]
    # a resource is the server's text: framed as data naming the server and the resource
    assert texts[0] == frame(
        "# Guide\n\nAlways cite your sources.", "MCP server 'notes', resource notes://guide"
    )
    assert inner(texts[1]) == "notes of monday"
    assert "[error MCP_ERROR]" in texts[2] and "notes://nothing-here" in texts[2]
    results = [e["result"] for e in events_of(run_dir) if e["type"] == "tool_result"]
    assert results[0]["data"]["resources"][0]["uri"] == "notes://guide"


def write_prompt_agent(tmp_path: Path, prompt: dict[str, Any]) -> None:
    path = tmp_path / "agents.d" / "worker.yaml"
    agent = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**agent, "prompt": prompt}, sort_keys=False))


@pytest.mark.parametrize("provider", WIRES)
def test_an_mcp_prompt_is_the_agents_system_prompt(tmp_path: Path, provider: str) -> None:
    workflow = mcp_project(tmp_path, {"notes": stdio_server("prompts")}, ["notes.add"])
    prompt = {
        "mcp": "notes",
        "name": "reviewer",
        "arguments": {"topic": "{{ question }} papers", "tone": "kind"},
    }
    write_prompt_agent(tmp_path, prompt)
    replies = [Reply(tool_calls=[call("notes__add", a=1, b=2)]), Reply(text="All done.")]
    with WireServer(Script({WORKER: replies})) as server:
        code, out, run_dir = run(tmp_path, workflow, server, provider)
        requests = server.requests
    assert code == 0, out
    assert len(requests) == 2
    # the server's prompt, then the line on framed text (its tools' results are the server's)
    system = "You are the MCP test worker, reviewing q papers. Be kind.\n\n" + NOTE
    assert all(r.system == system for r in requests)
    recorded = [e for e in events_of(run_dir) if e["type"] == "agent_prompt"]
    assert recorded[-1]["system"] == requests[0].system


def test_an_mcp_prompt_that_the_server_does_not_have_stops_the_run_in_one_line(tmp_path: Path) -> None:
    workflow = mcp_project(tmp_path, {"notes": stdio_server("no-prompt")}, ["notes.add"])
    write_prompt_agent(tmp_path, {"mcp": "notes", "name": "no_such_prompt"})
    with WireServer(Script({WORKER: [Reply(text="never asked")]})) as server:
        code, out, _ = run(tmp_path, workflow, server, "anthropic")
        assert server.requests == []
    assert code != 0
    assert "MCP server 'notes' gave no prompt for agent 'worker'" in out and "no_such_prompt" in out
    assert "Traceback" not in out


def test_validate_reports_an_mcp_prompt_of_an_unknown_server_at_its_line(tmp_path: Path) -> None:
    mcp_project(tmp_path, {"notes": stdio_server("v")}, ["notes.add"])
    write_prompt_agent(tmp_path, {"mcp": "nots", "name": "reviewer", "arguments": {"topic": "{{ oops"}})
    code, out = validate(tmp_path)
    assert code == 1, out
    assert "worker.yaml:" in out and "unknown MCP server 'nots'" in out and "did you mean 'notes'?" in out
    assert "Jinja2 syntax error" in out
    write_prompt_agent(tmp_path, {"mcp": "notes"})
    code, out = validate(tmp_path)
    assert code == 1 and "worker.yaml:" in out and "name" in out, out
    assert "Traceback" not in out
