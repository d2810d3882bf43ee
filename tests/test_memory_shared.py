"""Memories beyond one agent's own (issue 42): two agents share a memory by naming it and a named
reflect agent updates it within its own budget (both wire formats), the search index follows an
edit by hand; each scope's folder, flowrun's and Claude Code's, as a run and `flowrun memory`
find it; and the Python API's side: a run's `memory_dir`, a replay as recorded and with
`memory="current"`, and a resume that keeps the recorded memory folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import run_cli
from support.env import WIRES, model_env
from support.project import (
    SCRIPTED,
    model,
    script_manifest,
    wire_script,
    workflow,
    write_files,
    write_project,
)
from support.runs import events, meta
from support.wire_server import Reply, WireServer, call, calls

import flowrun
from flowrun.errors import UsageError

INDEX = "/memories/MEMORY.md"
TAG = '<memory-index path="/memories/MEMORY.md">'


@pytest.mark.parametrize("wire", WIRES)
def test_two_agents_share_a_memory_and_a_named_reflector_keeps_to_its_budget(
    tmp_path: Path, wire: str
) -> None:
    team = {"scope": "project", "name": "team"}
    wf = write_project(
        tmp_path,
        workflow(model(wire), steps=[{"agent": "writer"}, {"agent": "reader"}]),
        {
            "writer": {"memory": {**team, "reflect": "critic", "reflect_max_steps": 2}},
            "reader": {"memory": {**team, "writes": "none"}},
            "critic": {},
        },
    )
    create = calls(call("memory", command="create", path=INDEX, file_text="- team fact\n"))
    look = calls(call("memory", command="view", path=INDEX))
    script = wire_script(
        {"writer": [create, Reply("Written.")], "reader": [Reply("Read.")], "critic": [look] * 5}
    )
    with WireServer(script) as server:
        proc = run_cli([str(wf), "--run-id", "r", "-q"], cwd=tmp_path, env=model_env(server, wire))
        requests = list(server.requests)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    folder = tmp_path / ".flowrun" / "memory" / "team"
    assert (folder / "MEMORY.md").read_text() == "- team fact\n"

    [reader] = [r for r in requests if "You are the reader." in r.system]
    assert f"{TAG}\n- team fact\n</memory-index>" in reader.system  # what the writer saved
    assert "it is read-only for you" in reader.system and reader.tool_names == ["memory"]
    critic = [r for r in requests if "You are the critic." in r.system]
    assert len(critic) == 2  # its own budget: reflect_max_steps
    assert '<conversation agent="writer">' in critic[0].last_user_text
    ended = {e["agent_id"]: e for e in events(tmp_path / "runs" / "r") if e["type"] == "agent_end"}
    assert (ended["writer@reflect"]["agent"], ended["writer@reflect"]["status"]) == ("critic", "max_steps")
    assert meta(tmp_path / "runs" / "r")["status"] == "completed"  # the run keeps its outcome

    # the search index is a cache of the files: an edit by hand is found, the old text no more
    before = run_cli(["memory", "search", "reader", "team"], cwd=tmp_path)
    assert before.returncode == 0 and before.stdout.startswith("/memories/MEMORY.md:1:"), before.stdout
    (folder / "MEMORY.md").write_text("- a renamed fact, longer now\n")
    gone = run_cli(["memory", "search", "writer", "team"], cwd=tmp_path)
    assert gone.returncode == 1, gone.stdout + gone.stderr
    found = run_cli(["memory", "search", "writer", "renamed"], cwd=tmp_path)
    assert found.returncode == 0 and "[renamed]" in found.stdout, found.stdout + found.stderr


CLAUDE_HELPER = """\
    ---
    name: helper
    description: Helps, and remembers for every project of the user.
    tools: Read
    memory: user
    ---
    You are the helper.
    """


def test_each_scope_has_its_folder_for_a_run_and_for_flowrun_memory(tmp_path: Path) -> None:
    """flowrun's `user` folder ($FLOWRUN_MEMORY_DIR), Claude Code's `user` (~/.claude/...) and
    `local` (.claude/agent-memory-local/), and a `run` memory in the run folder."""
    agents = ("boss", "helper", "keeper", "scratch")
    saved = {
        name: {
            "tool_calls": [
                {
                    "name": "memory",
                    "arguments": {"command": "create", "path": INDEX, "file_text": f"- {name}\n"},
                }
            ]
        }
        for name in agents
    }
    script = script_manifest({name: [saved[name], {"text": "ok"}] for name in agents})
    spec = workflow(SCRIPTED, steps=[{"agent": name} for name in agents])
    write_project(
        tmp_path / "proj",
        spec,
        {
            "boss": {"memory": "user"},
            "keeper": {"memory": {"scope": "local", "folders": "claude-code"}},
            "scratch": {"memory": "run"},
        },
        {"script.yaml": script, ".claude/agents/helper.md": CLAUDE_HELPER},
    )
    home, users = tmp_path / "home", tmp_path / "memories"
    env = {"HOME": str(home), "FLOWRUN_MEMORY_DIR": str(users)}
    proc = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path / "proj", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    where = {
        "boss": users / "boss",
        "helper": home / ".claude" / "agent-memory" / "helper",
        "keeper": tmp_path / "proj" / ".claude" / "agent-memory-local" / "keeper",
        "scratch": tmp_path / "proj" / "runs" / "r" / "memory" / "scratch",
    }
    for name, folder in where.items():
        assert (folder / "MEMORY.md").read_text() == f"- {name}\n", name
        args = ["memory", "show", name, *(["--run", "runs/r"] if name == "scratch" else [])]
        shown = run_cli(args, cwd=tmp_path / "proj", env=env)
        assert shown.returncode == 0 and f": {folder}\n" in shown.stdout, shown.stdout + shown.stderr
    nowhere = run_cli(["memory", "show", "scratch"], cwd=tmp_path / "proj", env=env)
    assert nowhere.returncode == 2 and "give the run: --run RUN_DIR" in nowhere.stderr


async def test_the_python_api_runs_with_a_memory_dir_and_replays_as_recorded_or_current(
    tmp_path: Path,
) -> None:
    note = {
        "tool_calls": [
            {"name": "memory", "arguments": {"command": "create", "path": INDEX, "file_text": "- noted\n"}}
        ]
    }
    wf_path = write_project(
        tmp_path,
        workflow(SCRIPTED, entry="boss", task="Go."),
        {"boss": {"memory": "project"}},
        {"script.yaml": script_manifest({"boss": [note, {"text": "ok"}]})},
    )
    scratch = tmp_path / "scratch"
    wf = flowrun.load(wf_path)
    first = await wf.run({}, runs_dir=tmp_path / "runs", run_id="one", memory_dir=scratch)
    assert first.status == "completed", first.message
    index = scratch / "project" / "boss" / "MEMORY.md"
    assert index.read_text() == "- noted\n" and not (tmp_path / ".flowrun").exists()

    write_files(tmp_path, {"script.yaml": script_manifest({"boss": [{"text": "remembered"}]})})
    second = await flowrun.load(wf_path).run({}, runs_dir=tmp_path / "runs", run_id="two", memory_dir=scratch)
    assert second.status == "completed", second.message
    index.write_text("- changed by hand\n")
    same = await flowrun.replay(second.run_dir, diff=True)
    assert same.divergence is None, same.differences
    now = await flowrun.replay(second.run_dir, diff=True, memory="current")
    assert now.divergence is not None and now.divergence["reason"] == "system"
    assert any(
        line.startswith("cause: memory 'boss' changed since the recording") for line in now.differences
    )
    assert index.read_text() == "- changed by hand\n"  # a replay never changes the memory
    with pytest.raises(UsageError, match="keeps its recorded memory_dir"):
        await flowrun.resume(second.run_dir, memory_dir=tmp_path / "other")


def test_a_write_over_the_memorys_cap_in_all_is_refused_in_one_line(tmp_path: Path) -> None:
    def create(name: str) -> dict[str, object]:
        arguments = {"command": "create", "path": f"/memories/{name}.md", "file_text": "x" * 80}
        return {"tool_calls": [{"name": "memory", "arguments": arguments}]}

    wf = write_project(
        tmp_path,
        workflow(SCRIPTED, entry="boss", task="Go."),
        {"boss": {"memory": {"scope": "project", "max_bytes": 100}}},
        {"script.yaml": script_manifest({"boss": [create("a"), create("b"), {"text": "ok"}]})},
    )
    proc = run_cli([str(wf), "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = [e["result"] for e in events(tmp_path / "runs" / "r") if e["type"] == "tool_result"]
    assert [r["status"] for r in results] == ["success", "error"]
    assert results[1]["text"].startswith(
        "refused: the memory would hold 160 bytes, over its cap of 100 in all"
    )
    assert "\n" not in results[1]["text"]
    assert sorted(p.name for p in (tmp_path / ".flowrun" / "memory" / "boss").iterdir()) == ["a.md"]


def test_a_claude_code_agents_memory_is_a_scope_and_index_false_keeps_the_index_out(tmp_path: Path) -> None:
    bad = CLAUDE_HELPER.replace("memory: user", "memory: projct")
    write_files(
        tmp_path / "claude", {"wf.yaml": workflow(SCRIPTED, entry="helper"), ".claude/agents/helper.md": bad}
    )
    checked = run_cli(["validate", "."], cwd=tmp_path / "claude")
    assert checked.returncode == 1, checked.stdout
    assert (
        ".claude/agents/helper.md:5:" in checked.stdout and "'projct' is not a memory scope" in checked.stdout
    )
    assert "did you mean 'project'?" in checked.stdout and "Traceback" not in checked.stdout + checked.stderr

    wf = write_project(
        tmp_path / "plain",
        workflow(SCRIPTED, entry="boss", task="Go."),
        {"boss": {"memory": {"scope": "project", "index": False}}},
    )
    write_files(tmp_path / "plain" / ".flowrun" / "memory" / "boss", {"MEMORY.md": "- not in the prompt\n"})
    proc = run_cli([str(wf), "--run-id", "d", "--dry-run", "-q"], cwd=tmp_path / "plain")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    prompt = next(e for e in events(tmp_path / "plain" / "runs" / "d") if e["type"] == "agent_prompt")
    assert "not in the prompt" not in prompt["system"] and "<memory-index" not in prompt["system"]
    assert [tool["name"] for tool in prompt["tools"]] == [
        "memory"
    ]  # still offered: it looks when it needs to
