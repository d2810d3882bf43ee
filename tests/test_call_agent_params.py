"""call_agent's per-call `max_steps` (capped by the manifest), `return_full_output` and
`output_dir` (the sub-agent's writes, by file tools and in the sandbox, are confined to it), and
tool defaults taken from the manifest's `parameters` (web_search's max_results and
search_depth); through the CLI with the real openai SDK against the scripted wire server."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from support.cli import run_cli
from support.project import write_files
from support.wire_server import Reply, Script, ToolCallSpec, WireServer

WORKFLOW = """\
version: 1
kind: workflow
name: team
inputs: {question: {}}
models:
  m: {provider: openai-compatible, base_url: "BASE", model: m, stream: false}
default_model: m
entry: boss
"""
BOSS = """\
version: 1
name: boss
prompt: You are the boss.
tools: [helper, web_search]
"""
HELPER = """\
version: 1
name: helper
description: Helps.
prompt: You are the helper.
max_steps: 5
tools: [write_file, execute_shell]
"""
LONG = "The whole answer. " * 400  # longer than summary_max_chars (4000)


def project(tmp: Path, base_url: str) -> Path:
    files = {
        "wf.yaml": WORKFLOW.replace("BASE", base_url),
        "agents.d/boss.yaml": BOSS,
        "agents.d/helper.yaml": HELPER,
        "tools.d/web_search.yaml": web_search_with_default(2),
    }
    return write_files(tmp, {rel: textwrap.dedent(text) for rel, text in files.items()})


def web_search_with_default(n: int) -> str:
    from support.paths import REPO

    text = (REPO / "tools.d" / "web_search.yaml").read_text()
    text = text.replace("maximum: 20, default: 5", f"maximum: 20, default: {n}")
    return text.replace("[basic, advanced], default: basic", "[basic, advanced], default: advanced")


def run(tmp: Path, script: Script) -> tuple[Any, list[dict[str, Any]], list[Any]]:
    with WireServer(script) as server:
        project(tmp, server.openai_base_url)
        proc = run_cli(["wf.yaml", "--question", "q", "-q", "--run-id", "r"], cwd=tmp)
        requests = server.requests
    events = [json.loads(line) for line in (tmp / "runs" / "r" / "events.jsonl").read_text().splitlines()]
    return proc, events, requests


def results(events: list[dict[str, Any]], agent: str) -> list[dict[str, Any]]:
    """An agent's tool results in the order of its calls (calls of one step run concurrently)."""
    mine = [e for e in events if e.get("agent") == agent]
    by_call = {(e["agent_id"], e["call_id"]): e["result"] for e in mine if e["type"] == "tool_result"}
    return [by_call[(e["agent_id"], e["call_id"])] for e in mine if e["type"] == "tool_call"]


def test_output_dir_confines_writes_and_the_call_gets_its_steps(tmp_path: Path) -> None:
    script = Script(
        {
            "boss": [
                Reply(
                    tool_calls=[
                        ToolCallSpec(
                            "helper",
                            {
                                "task": "write",
                                "output_dir": "out",
                                "max_steps": 4,
                                "return_full_output": True,
                            },
                        )
                    ]
                ),
                Reply(tool_calls=[ToolCallSpec("helper", {"task": "again", "max_steps": 1})]),
                Reply(tool_calls=[ToolCallSpec("helper", {"task": "too many", "max_steps": 50})]),
                Reply(tool_calls=[ToolCallSpec("helper", {"task": "escape", "output_dir": "../x"})]),
                Reply(tool_calls=[ToolCallSpec("helper", {"task": "nul", "output_dir": "a\u0000b"})]),
                Reply(tool_calls=[ToolCallSpec("web_search", {"query": "sorting key functions"})]),
                Reply(text="done"),
            ],
            "helper": [
                Reply(tool_calls=[ToolCallSpec("write_file", {"path": "elsewhere.md", "content": "no"})]),
                Reply(tool_calls=[ToolCallSpec("write_file", {"path": "out/notes.md", "content": "yes"})]),
                Reply(
                    tool_calls=[
                        ToolCallSpec("execute_shell", {"command": "echo x > sneaky.txt"}),
                        ToolCallSpec("execute_shell", {"command": "echo ok > out/shell.txt"}),
                    ]
                ),
                Reply(text=LONG),
            ],
        },
        {"boss": "You are the boss", "helper": "You are the helper"},
    )
    proc, events, requests = run(tmp_path, script)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = tmp_path / "runs" / "r"
    helper = results(events, "helper")
    assert helper[0]["error"]["code"] == "PERMISSION_DENIED" and "only under out/" in helper[0]["text"]
    assert helper[1]["status"] == "success" and (run_dir / "out" / "notes.md").read_text() == "yes"
    assert (
        helper[2]["status"] == "error" and not (run_dir / "sneaky.txt").exists()
    )  # read-only in the sandbox
    assert helper[3]["status"] == "success" and (run_dir / "out" / "shell.txt").read_text() == "ok\n"
    boss = results(events, "boss")
    first = boss[0]
    assert first["status"] == "success" and first["data"]["full_output"] == LONG
    assert LONG.strip() in first["text"] and "summary cut" not in first["text"]
    assert first["data"]["output_files"] == ["out/notes.md", "out/shell.txt"]
    # max_steps 1: the helper (a fresh instance) stops after one model call
    assert boss[1]["status"] == "partial" and boss[1]["data"]["steps_used"] == 1
    assert boss[1]["data"]["outcome"] == "max_steps"
    # over the manifest's cap (5): the model is told the limit
    assert boss[2]["error"]["code"] == "INVALID_PARAM" and "5" in boss[2]["text"]
    assert boss[3]["error"]["code"] == "ACCESS_DENIED"
    assert boss[4]["error"]["code"] == "INVALID_PARAM" and "NUL" in boss[4]["text"]
    # the manifest's default for max_results (2) is the one used when the model gives none
    assert len(boss[5]["data"]["results"]) == 2
    assert boss[5]["context"]["params_input"]["search_depth"] == "advanced"
    helper_tool = next(t for t in requests[0].tools if t["function"]["name"] == "helper")
    params = helper_tool["function"]["parameters"]["properties"]
    assert params["max_steps"]["maximum"] == 5 and params["return_full_output"]["type"] == "boolean"


def test_a_sub_agent_that_writes_thousands_of_files_gets_a_bounded_listing(tmp_path: Path) -> None:
    """The helper's shell makes 3,000 files in its output_dir: the boss is shown the first 100
    and how many more, the result's data keeps the first 1,000 and the total."""
    many = "cd out && python3 -c \"[open(f'f{i:05}.txt', 'w').close() for i in range(3000)]\""
    script = Script(
        {
            "boss": [
                Reply(tool_calls=[ToolCallSpec("helper", {"task": "write", "output_dir": "out"})]),
                Reply(text="done"),
            ],
            "helper": [
                Reply(tool_calls=[ToolCallSpec("execute_shell", {"command": many})]),
                Reply(text="wrote them"),
            ],
        },
        {"boss": "You are the boss", "helper": "You are the helper"},
    )
    proc, events, _ = run(tmp_path, script)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = results(events, "boss")[0]
    assert result["text"].count("\n- out/") == 100 and "[and 2900 more]" in result["text"]
    assert len(result["data"]["output_files"]) == 1000 and result["data"]["output_files_total"] == 3000
    assert result["data"]["output_files"][0] == "out/f00000.txt"
    ended = next(e for e in events if e["type"] == "agent_end" and e["agent"] == "helper")
    assert len(ended["output_files"]) == 1000
