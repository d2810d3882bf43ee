"""`flowrun show RUN --messages`: the conversations of a run, read from its events.jsonl, through
the command line on a run of a scripted model (the instructor/worker roster over the wire server
is in test_rosters.py): folding and --full, the engine's own turns, a sub-agent under its call,
--agent, --json, and the one-line errors for flags that do not go together."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli
from support.project import write_files

FILES = {
    "flow/talk.yaml": """\
        version: 1
        kind: workflow
        name: talk
        inputs: {q: {default: hello}}
        models: {s: {provider: scripted, model: script, script: talk.script.yaml}}
        default_model: s
        entry: lead
        workspace: {files: {notes.txt: "{% for i in range(40) %}note line {{ i }}\\n{% endfor %}"}}
        """,
    "flow/agents.d/lead.yaml": """\
        version: 1
        name: lead
        prompt: You lead. Question {{ q }}.
        stop: {on_text: false}
        tools: [read_file, helper, finish]
        """,
    "flow/agents.d/helper.yaml": """\
        version: 1
        name: helper
        description: Helps.
        prompt: You help.
        tools: [read_file]
        """,
    "flow/talk.script.yaml": """\
        version: 1
        kind: script
        agents:
          lead:
            - text: Looking.
              tool_calls: [{name: read_file, arguments: {path: notes.txt}}]
            - tool_calls: [{name: helper, arguments: {task: Summarise notes.txt}}]
            - text: Nearly there.
            - tool_calls: [{name: finish, arguments: {result: all done}}]
          helper:
            - text: notes.txt says hello.
        """,
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("talk")
    write_files(root, FILES)
    proc = run_cli(["flow/talk.yaml", "--run-id", "r", "-q"], cwd=root)
    assert proc.returncode == 0, proc.stderr
    return root / "runs" / "r"


def show(run_dir: Path, *flags: str) -> tuple[int, str, str]:
    proc = run_cli(["show", str(run_dir), *flags], cwd=run_dir.parent.parent)
    return proc.returncode, proc.stdout, proc.stderr


def test_the_conversation_in_order(run_dir: Path) -> None:
    code, out, err = show(run_dir, "--messages")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("── lead · lead · model s ──")
    order = [
        "system",
        "    You lead. Question hello.",
        "user (task)",
        "assistant",
        "    Looking.",
        '  → read_file {"path": "notes.txt"}',
        "tool read_file [script_lead_0_0]: success",
        '  → helper {"task": "Summarise notes.txt"}',
        "  │ user (task)",
        "  │     Summarise notes.txt",
        "  │     notes.txt says hello.",
        "  │ [completed after 1 step(s)]",
        "tool helper [script_lead_1_0]: success",
        "    Nearly there.",
        "user (from flowrun)",  # the loop's nudge after an answer without tool calls
        "    Continue. Call a finish tool when the task is done.",
        '  → finish {"result": "all done"}',
        "[finished after 4 step(s)]",
    ]
    positions = [lines.index(line) for line in order]
    assert positions == sorted(positions)
    assert any(line.startswith("  │ ── helper · lead/helper@script_lead_1_0 · model s") for line in lines)


def test_long_texts_are_folded_unless_full(run_dir: Path) -> None:
    _, out, _ = show(run_dir, "--messages")
    assert "note line 18" in out and "note line 30" not in out
    note = f"    [… 21 more line(s): `flowrun show {run_dir} --messages --full` shows all]"
    assert note in out.splitlines()
    _, whole, _ = show(run_dir, "--messages", "--full")
    assert "        40\tnote line 39" in whole.splitlines() and "more line(s)" not in whole


def test_one_agent(run_dir: Path) -> None:
    code, out, _ = show(run_dir, "--messages", "--agent", "helper")
    assert code == 0
    assert out.startswith("── helper · lead/helper@script_lead_1_0") and "lead ·" not in out
    assert "    notes.txt says hello." in out.splitlines()
    code, _, err = show(run_dir, "--messages", "--agent", "nobody")
    assert code == 1 and err.splitlines() == [
        f"error: no agent 'nobody' in {run_dir}",
        "  hint: its agents: helper, lead",
    ]


def test_json_for_tools(run_dir: Path) -> None:
    code, out, _ = show(run_dir, "--messages", "--json")
    assert code == 0
    lead, helper = json.loads(out)
    assert (lead["agent_id"], helper["agent_id"], helper["parent"]) == (
        "lead",
        "lead/helper@script_lead_1_0",
        "lead",
    )
    roles = [(m["role"], m.get("kind")) for m in lead["messages"]]
    assert roles[:3] == [("system", None), ("user", "task"), ("assistant", None)]
    assert ("user", "engine") in roles
    read = next(m for m in lead["messages"] if m["role"] == "tool" and m["name"] == "read_file")
    assert "    40\tnote line 39" in read["text"]  # never folded
    call = next(c for m in lead["messages"] if m["role"] == "assistant" for c in m["tool_calls"])
    assert call == {"id": "script_lead_0_0", "name": "read_file", "arguments": {"path": "notes.txt"}}
    helper_call = next(
        c
        for m in lead["messages"]
        if m["role"] == "assistant"
        for c in m["tool_calls"]
        if c["name"] == "helper"
    )
    assert helper_call["agent_ids"] == [helper["agent_id"]]
    assert [m["text"] for m in helper["messages"] if m["role"] == "assistant"] == ["notes.txt says hello."]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--json"], "--json goes with --messages"),
        (["--full"], "--full goes with --messages"),
        (["--agent", "lead"], "--agent goes with --prompts or --messages"),
        (["--messages", "--prompts"], "--prompts and --messages are two views"),
    ],
)
def test_flags_that_do_not_go_together(run_dir: Path, flags: list[str], message: str) -> None:
    code, _, err = show(run_dir, *flags)
    assert code == 2 and err.splitlines()[0] == f"error: {message}"


def test_not_a_run(tmp_path: Path) -> None:
    proc = run_cli(["show", str(tmp_path), "--messages"], cwd=tmp_path)
    assert proc.returncode == 1
    assert "has no events.jsonl, so it is not a flowrun run folder" in proc.stderr
