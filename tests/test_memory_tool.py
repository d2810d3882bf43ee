"""The `memory` tool's calls through the CLI over both wire formats: hostile ones are refused in
one line each and change nothing outside the memory (a `..`, an absolute path, a planted symlink
to a file or a folder, a hidden name, 10 MB of text), a key in the text is redacted before it is
written; the command set (view, create, str_replace, insert, delete, rename, search) as Anthropic's
memory tool defines it; a read-only memory refuses writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli
from support.env import WIRES, model_env
from support.project import model, wire_script, workflow, write_files, write_project
from support.runs import events
from support.wire_server import Reply, WireServer, call, calls

KEY = "tok-5e3f0a9c81b2d7e4"  # in the environment as SERVICE_TOKEN: a secret
MEMORY = "/memories/MEMORY.md"


def memory(command: str, **arguments: object) -> Reply:
    """A reply making one call of the memory tool."""
    return calls(call("memory", command=command, **arguments))


def run(tmp: Path, wire: str, replies: list[Reply], memory: object = "project") -> list[dict[str, object]]:
    """Run boss (its memory: `memory`) with `replies`; each memory call's result, in the order
    of the calls (calls of one reply run at once and may end in any order)."""
    wf = write_project(tmp, workflow(model(wire), entry="boss", task="Go."), {"boss": {"memory": memory}})
    with WireServer(wire_script({"boss": [*replies, Reply("Done.")]})) as server:
        env = model_env(server, wire, SERVICE_TOKEN=KEY)
        proc = run_cli([str(wf), "--run-id", "r", "-q"], cwd=tmp, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = events(tmp / "runs" / "r")
    results = {e["call_id"]: e["result"] for e in found if e["type"] == "tool_result"}
    return [results[e["call_id"]] for e in found if e["type"] == "tool_call"]


@pytest.mark.parametrize("wire", WIRES)
def test_hostile_calls_are_refused_in_one_line_and_a_key_is_redacted(tmp_path: Path, wire: str) -> None:
    folder = tmp_path / ".flowrun" / "memory" / "boss"
    outside = write_files(tmp_path / "outside", {"secret.txt": "outside\n"})
    write_files(folder, {"MEMORY.md": "- index\n"})
    (folder / "link.md").symlink_to(outside / "secret.txt")
    (folder / "planted").symlink_to(outside)
    hostile = calls(
        call("memory", command="create", path="/memories/../escape.md", file_text="x"),
        call("memory", command="create", path="/etc/flowrun-escape.md", file_text="x"),
        call("memory", command="view", path="/memories/link.md"),
        call("memory", command="str_replace", path="/memories/link.md", old_str="outside", new_str="owned"),
        call("memory", command="create", path="/memories/planted/x.md", file_text="x"),
        call("memory", command="create", path="/memories/.hidden", file_text="x"),
        call("memory", command="create", path="/memories/key.md", file_text=f"the service token is {KEY}\n"),
    )
    results = run(tmp_path, wire, [hostile])
    refused, redacted = results[:-1], results[-1]
    assert [r["status"] for r in refused] == ["error"] * 6
    for result in refused:
        assert "\n" not in str(result["text"]), result["text"]
    assert [r["error"]["code"] for r in refused] == ["ACCESS_DENIED"] * 6  # type: ignore[index]
    assert "'..'" in str(refused[0]["text"]) and "outside /memories" in str(refused[1]["text"])
    assert "is a symlink" in str(refused[2]["text"]) and "is a symlink" in str(refused[4]["text"])
    assert redacted["status"] == "success" and "1 secret(s) replaced" in str(redacted["text"])
    assert "\n" not in str(redacted["text"])
    # nothing outside the memory changed, nothing refused was written, the key is nowhere
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "outside\n"
    assert not (tmp_path / ".flowrun" / "memory" / "escape.md").exists()
    assert sorted(p.name for p in folder.iterdir()) == ["MEMORY.md", "key.md", "link.md", "planted"]
    assert (folder / "key.md").read_text() == "the service token is [REDACTED]\n"
    assert KEY not in (tmp_path / "runs" / "r" / "events.jsonl").read_text()


def test_ten_megabytes_are_refused_in_one_line_before_anything_is_written(tmp_path: Path) -> None:
    big = memory("create", path="/memories/big.md", file_text="a" * 10_000_000)
    [result] = run(tmp_path, "openai", [big])
    assert result["status"] == "error" and result["error"]["code"] == "TOO_LARGE"  # type: ignore[index]
    assert str(result["text"]).startswith("refused: /memories/big.md would hold 10,000,000 bytes, over")
    assert "\n" not in str(result["text"])
    assert not (tmp_path / ".flowrun" / "memory" / "boss" / "big.md").exists()


@pytest.mark.parametrize("wire", WIRES)
def test_the_command_set(tmp_path: Path, wire: str) -> None:
    steps = [
        memory("create", path=MEMORY, file_text="- a\n- b\n"),
        memory("create", path=MEMORY, file_text="again"),
        memory("str_replace", path=MEMORY, old_str="- b", new_str="- B"),
        memory("str_replace", path=MEMORY, old_str="- ", new_str="* "),
        memory("insert", path=MEMORY, insert_line=1, insert_text="- between"),
        memory("insert", path=MEMORY, insert_line=9, insert_text="- far"),
        memory("create", path="/memories/notes/build.md", file_text="run make gen first\n"),
        memory("rename", old_path="/memories/notes/build.md", new_path="/memories/build.md"),
        memory("view", path="/memories"),
        memory("view", path=MEMORY, view_range=[2, 3]),
        memory("search", query="generate make"),
        memory("delete", path="/memories/notes"),
        memory("delete", path="/memories/notes"),
    ]
    results = run(tmp_path, wire, steps)
    texts = [str(r["text"]) for r in results]
    assert [r["status"] for r in results] == [
        *("success", "error", "success", "error", "success", "error", "success", "success"),
        *("success", "success", "success", "success", "error"),
    ]
    assert texts[0] == "File created successfully at: /memories/MEMORY.md"
    assert "already exists" in texts[1]
    assert "Multiple occurrences of old_str in lines: [1, 2]" in texts[3]
    assert "[0, 3]" in texts[5]
    assert texts[7] == "Successfully renamed /memories/notes/build.md to /memories/build.md"
    assert "/memories/build.md" in texts[8] and "/memories/notes/" in texts[8]
    assert texts[9].endswith("     2\t- between\n     3\t- B")
    assert (
        texts[10].startswith("1 passage(s) match")
        and "/memories/build.md:1: run [make] gen first" in texts[10]
    )
    assert "does not exist" in texts[12]
    folder = tmp_path / ".flowrun" / "memory" / "boss"
    assert (folder / "MEMORY.md").read_text() == "- a\n- between\n- B\n"
    assert sorted(p.name for p in folder.iterdir()) == ["MEMORY.md", "build.md"]
    writes = [e for e in events(tmp_path / "runs" / "r") if e["type"] == "memory_write"]
    assert [w["command"] for w in writes] == ["create", "str_replace", "insert", "create", "rename", "delete"]
    assert writes[1]["before"] == writes[0]["after"] and writes[2]["before"] == writes[1]["after"]
    assert writes[-1]["after"] is None


@pytest.mark.parametrize("wire", WIRES)
def test_a_read_only_memory_offers_view_and_search_and_refuses_writes(tmp_path: Path, wire: str) -> None:
    write_files(tmp_path / ".flowrun" / "memory" / "boss", {"MEMORY.md": "- kept\n"})
    write = memory("create", path="/memories/x.md", file_text="x")
    results = run(tmp_path, wire, [write], memory={"scope": "project", "writes": "none"})
    assert results[0]["status"] == "error"
    assert results[0]["error"]["code"] == "INVALID_PARAM"  # type: ignore[index]  # not in the schema's enum
    prompt = next(e for e in events(tmp_path / "runs" / "r") if e["type"] == "agent_prompt")
    [tool] = prompt["tools"]
    assert tool["parameters"]["properties"]["command"]["enum"] == ["view", "search"]
    assert "it is read-only for you" in prompt["system"]
    assert sorted(p.name for p in (tmp_path / ".flowrun" / "memory" / "boss").iterdir()) == ["MEMORY.md"]


def test_an_index_over_its_caps_is_cut_at_a_line_and_said_so(tmp_path: Path) -> None:
    lines = "".join(f"- fact {i}\n" for i in range(1, 31))
    write_files(tmp_path / ".flowrun" / "memory" / "boss", {"MEMORY.md": lines})
    run(tmp_path, "openai", [], memory={"scope": "project", "index_lines": 10})
    found = events(tmp_path / "runs" / "r")
    [index] = [e for e in found if e["type"] == "memory_index"]
    assert index["lines"] == 30 and index["cut"] is True and index["text"].endswith("- fact 10\n")
    prompt = next(e for e in found if e["type"] == "agent_prompt")["system"]
    assert "/memories/MEMORY.md has 30 lines; the first that fit are shown" in prompt
    assert "- fact 10\n</memory-index>" in prompt and "- fact 11" not in prompt
    assert (
        json.loads((tmp_path / "runs" / "r" / "run.json").read_text())["memory"]["boss"]["scope"] == "project"
    )
