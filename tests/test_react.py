"""ReAct text mode: parsing, and a run through the CLI with a model that has no native tools."""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import run_cli
from support.project import SCRIPTED, scripted_project

from flowrun.providers.react import parse_react, to_text_messages
from flowrun.types import Message, ToolCall, ToolSpec

WRITE = ToolSpec(
    "write_file",
    "Write a file.",
    {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path"],
    },
)
GREP = ToolSpec(
    "grep",
    "Search.",
    {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]},
)


def test_multiline_action_input() -> None:
    text = (
        "Thought: I will write the notes.\n"
        "Action: write_file\n"
        "Action Input: {\n"
        '  "path": "notes.md",\n'
        '  "content": "line one\\nline two"\n'
        "}\n"
    )
    answer, (call,) = parse_react(text, [WRITE], "react_0")
    assert call.name == "write_file" and call.parse_error is None
    assert call.arguments == {"path": "notes.md", "content": "line one\nline two"}
    assert answer.startswith("Thought:")


def test_invented_observation_is_dropped_and_fences_tolerated() -> None:
    text = (
        'Action: grep\nAction Input: ```json\n{"pattern": "x"}\n```\nObservation: made up\nFinal Answer: no'
    )
    _, (call,) = parse_react(text, [GREP], "r")
    assert call.arguments == {"pattern": "x"}


def test_plain_text_input_for_single_string_tool_and_final_answer() -> None:
    _, (call,) = parse_react("Action: grep\nAction Input: TODO items", [GREP], "r")
    assert call.arguments == {"pattern": "TODO items"}
    answer, calls = parse_react("Thought: done\nFinal Answer: 42 files", [GREP], "r")
    assert calls == [] and answer == "42 files"


def test_malformed_input_is_a_parse_error_not_a_crash() -> None:
    _, (call,) = parse_react('Action: write_file\nAction Input: {"path": ', [WRITE], "r")
    assert call.parse_error and call.arguments == {}


def test_history_becomes_text_turns() -> None:
    history = [
        Message("user", "task"),
        Message("assistant", "Action: grep\nAction Input: {}", [ToolCall("r0", "grep", {})]),
        Message("tool", "3 matches", tool_call_id="r0"),
    ]
    turns = to_text_messages(history)
    assert [m.role for m in turns] == ["user", "assistant", "user"]
    assert turns[2].content == "Observation: 3 matches" and not turns[1].tool_calls


def test_react_run_through_cli(tmp_path: Path) -> None:
    replies = [
        {
            "text": "Thought: write\nAction: write_file\n"
            'Action Input: {\n  "path": "a.md",\n  "content": "hi\\nthere"\n}'
        },
        {"text": 'Thought: check\nAction: read_file\nAction Input: {"path": "a.md"}\nObservation: invented'},
        {"text": "Thought: ok\nFinal Answer: wrote a.md"},
    ]
    reacter = {"prompt": "You act.", "tools": ["write_file", "read_file"]}
    models = {"m": {**SCRIPTED, "tool_calling": "react"}}
    scripted_project(tmp_path, {"reacter": reacter}, {"reacter": replies}, entry="reacter", models=models)
    proc = run_cli(["wf.yaml", "--run-id", "r"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = tmp_path / "runs" / "r"
    assert (run_dir / "a.md").read_text() == "hi\nthere"
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    requests = [e for e in events if e["type"] == "model_request"]
    assert all(e["tools"] for e in requests)  # the loop still knows its tools
    results = [e["result"] for e in events if e["type"] == "tool_result"]
    assert [r["status"] for r in results] == ["success", "success"]
    texts = [e["response"]["text"] for e in events if e["type"] == "model_response"]
    assert not any("invented" in t for t in texts)  # a made-up observation never enters the history
    end = next(e for e in events if e["type"] == "agent_end")
    assert end["status"] == "completed"
    # seen whole: the final answer's Thought is recorded as the model wrote it, the ReAct tool
    # block is in what the agent was told (prompts/, show --prompts, show --messages), and the
    # agent's output is the answer alone
    final = [e["response"] for e in events if e["type"] == "model_response"][-1]
    assert final["text"] == "wrote a.md" and final["raw_text"] == "Thought: ok\nFinal Answer: wrote a.md"
    assert "raw_text" not in next(e["response"] for e in events if e["type"] == "model_response")
    (told,) = [e["system"] for e in events if e["type"] == "agent_prompt"]
    assert told.startswith("You act.") and "Action Input: the arguments as one JSON object" in told
    assert "- write_file: " in told and "- read_file: " in told
    assert "Action Input: the arguments" in next((run_dir / "prompts").glob("*.md")).read_text()
    prompts = run_cli(["show", str(run_dir), "--prompts"], cwd=tmp_path).stdout
    assert "Available tools:" in prompts
    messages = run_cli(["show", str(run_dir), "--messages", "--full"], cwd=tmp_path).stdout
    assert "Thought: ok" in messages and "Final Answer: wrote a.md" in messages
    assert "Available tools:" in messages
