"""Project instructions: the AGENTS.md (else CLAUDE.md) of the workflow's folder ends the system
prompt of the agents that opt in (`instructions: project`, or the workflow's default), in a
delimited block naming its file; Claude Code agent files get CLAUDE.md as Claude Code gives it.
`show --prompts` shows it, `validate` warns past the cap, and a resume and a replay read the text
the run recorded, never the file as edited since (`replay --diff` names it when it matters)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cli import run_cli
from support.env import WIRES, model_env
from support.project import model, wire_script, workflow, write_files, write_project
from support.runs import events
from support.wire_server import Reply, WireRequest, WireServer, call, calls

WAITING = 75  # a run that waits for a decision
RULE = "Write every comment in Esperanto."


def project(root: Path, wire: str, agents: dict[str, Any], files: dict[str, Any], **keys: Any) -> Path:
    spec = workflow(model(wire), entry="boss", task="Go.", **keys)
    return write_project(root, spec, agents, files)


def run(
    root: Path, wf: Path, replies: dict[str, list[Reply]], wire: str = "openai", run_id: str = "r"
) -> list[WireRequest]:
    with WireServer(wire_script(replies)) as server:
        proc = run_cli([str(wf), "--run-id", run_id], cwd=root, env=model_env(server, wire))
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return requests


def system_of(requests: list[WireRequest], agent: str) -> str:
    return next(r.system for r in requests if r.system.startswith(f"You are the {agent}."))


@pytest.mark.parametrize("wire", WIRES)
def test_agents_that_opt_in_read_agents_md_in_a_block_naming_it(tmp_path: Path, wire: str) -> None:
    agents = {"boss": ["helper", "quiet"], "helper": [], "quiet": {"instructions": "none"}}
    files = {"AGENTS.md": f"# Conventions\n\n{RULE}\n", "CLAUDE.md": "Claude-only notes.\n"}
    wf = project(tmp_path, wire, agents, files, instructions="project")
    boss = [calls(call("helper", task="a"), call("quiet", task="b")), Reply("Done.")]
    requests = run(tmp_path, wf, {"boss": boss, "helper": [Reply("ok")], "quiet": [Reply("ok")]}, wire)
    system = system_of(requests, "boss")
    # the agent's own prompt, then the block: delimited, naming its file, AGENTS.md winning
    head, _, block = system.partition("\n\n<project-instructions")
    assert head == "You are the boss."
    assert block.startswith(' files="AGENTS.md">\n') and RULE in block
    assert "</project-instructions>" in block and "Claude-only notes." not in system
    assert RULE in system_of(requests, "helper")  # the workflow's default
    assert "project-instructions" not in system_of(requests, "quiet")  # its own `instructions: none`
    (read,) = [e for e in events(tmp_path / "runs" / "r") if e["type"] == "project_instructions"]
    assert read["files"] == ["AGENTS.md"] and read["cut"] is False
    shown = run_cli(["show", str(tmp_path / "runs" / "r"), "--prompts"], cwd=tmp_path)
    assert shown.returncode == 0 and '<project-instructions files="AGENTS.md">' in shown.stdout
    assert RULE in shown.stdout


def test_without_a_key_nothing_is_read_and_claude_md_stands_in_for_agents_md(tmp_path: Path) -> None:
    wf = project(tmp_path / "off", "openai", {"boss": []}, {"AGENTS.md": RULE})
    assert RULE not in system_of(run(tmp_path / "off", wf, {"boss": [Reply("Done.")]}), "boss")
    wf = project(tmp_path / "claude", "openai", {"boss": {"instructions": "project"}}, {"CLAUDE.md": RULE})
    system = system_of(run(tmp_path / "claude", wf, {"boss": [Reply("Done.")]}), "boss")
    assert '<project-instructions files="CLAUDE.md">' in system and RULE in system


CLAUDE_AGENT = "---\nname: reviewer\ndescription: Reviews code.\ntools: Read\n---\nYou are the reviewer.\n"


def test_a_claude_code_agent_gets_claude_md_as_claude_code_gives_it(tmp_path: Path) -> None:
    files = {
        ".claude/agents/reviewer.md": CLAUDE_AGENT,
        "CLAUDE.md": f"{RULE}\nSee @docs/style.md for the style; `@not-an-import.md` is code.\n",
        "docs/style.md": "Short lines.\n",
        "CLAUDE.local.md": "My sandbox is at /srv/me.\n",
        "AGENTS.md": "Tool-neutral notes.\n",
    }
    wf = project(tmp_path, "openai", {"boss": ["reviewer"]}, files)
    replies = {"boss": [calls(call("reviewer", task="r")), Reply("Done.")], "reviewer": [Reply("ok")]}
    requests = run(tmp_path, wf, replies)
    system = system_of(requests, "reviewer")
    assert '<project-instructions files="CLAUDE.md, docs/style.md, CLAUDE.local.md">' in system
    assert "Contents of CLAUDE.md (project instructions, checked into the codebase):" in system
    assert "Contents of docs/style.md (project instructions, checked into the codebase):" in system
    assert "Contents of CLAUDE.local.md (user's private project instructions, not checked in):" in system
    assert "IMPORTANT: These instructions OVERRIDE any default behavior" in system
    assert "Tool-neutral notes." not in system
    assert "project-instructions" not in system_of(requests, "boss")  # flowrun's agents opt in
    # the workflow's `instructions: none` holds for Claude Code files too
    spec = yaml.safe_load((tmp_path / "wf.yaml").read_text()) | {"instructions": "none"}
    (tmp_path / "wf.yaml").write_text(yaml.safe_dump(spec))
    assert RULE not in system_of(run(tmp_path, wf, replies, run_id="off"), "reviewer")


def test_instructions_over_the_cap_are_cut_with_a_warning(tmp_path: Path) -> None:
    lines = [f"Rule {i}: {'x' * 70}" for i in range(600)]  # ~43 KB
    wf = project(
        tmp_path, "openai", {"boss": []}, {"AGENTS.md": "\n".join(lines) + "\n"}, instructions="project"
    )
    checked = run_cli(["validate", str(tmp_path)], cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr  # a warning, not an error
    (warning,) = [line for line in checked.stdout.splitlines() if "instructions-too-long" in line]
    cut_line = len("".join(f"{line}\n" for line in lines)[: 32 * 1024].splitlines())
    assert warning.startswith(f"AGENTS.md:{cut_line}:1: warning[instructions-too-long]")
    with WireServer(wire_script({"boss": [Reply("Done.")]})) as server:
        proc = run_cli([str(wf), "--run-id", "r"], cwd=tmp_path, env=model_env(server, "openai"))
        system = server.requests[0].system
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "over the 32768-byte cap" in proc.stdout + proc.stderr
    assert "Rule 0:" in system and "Rule 599:" not in system
    assert "[cut: the instructions are" in system and system.endswith("</project-instructions>")


def test_a_resume_and_a_replay_read_the_recorded_instructions(tmp_path: Path) -> None:
    agents = {"boss": ["helper", {"write_file": {"approve": "ask"}}], "helper": []}
    wf = project(
        tmp_path, "openai", agents, {"AGENTS.md": "Version one of the rules.\n"}, instructions="project"
    )
    boss = [
        calls(call("write_file", path="a.md", content="a")),
        calls(call("helper", task="check a.md")),
        Reply("Done."),
    ]
    run_dir = tmp_path / "runs" / "r"
    with WireServer(wire_script({"boss": boss, "helper": [Reply("ok")]})) as server:
        env = model_env(server, "openai")
        waiting = run_cli([str(wf), "--run-id", "r"], cwd=tmp_path, env=env)
        assert waiting.returncode == WAITING, waiting.stdout + waiting.stderr
        (tmp_path / "AGENTS.md").write_text("Version two of the rules.\n")  # edited while it waits
        done = run_cli(["approve", str(run_dir), "--allow", "-q"], cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        requests = server.requests
    # every request, the helper started after the resume included, has the recorded text
    assert {r.system.split("\n\n")[0] for r in requests} == {"You are the boss.", "You are the helper."}
    assert all("Version one" in r.system and "Version two" not in r.system for r in requests)
    assert len(requests) == 4  # the boss's first answer came from the log, not the model again
    replayed = run_cli(["replay", str(run_dir), "--into", str(tmp_path / "again"), "--diff"], cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    prompts = [e["system"] for e in events(tmp_path / "again") if e["type"] == "agent_prompt"]
    assert prompts and all("Version one" in p for p in prompts)


def test_replay_diff_names_instructions_an_agent_reads_now_and_did_not_then(tmp_path: Path) -> None:
    wf = project(tmp_path, "openai", {"boss": []}, {"AGENTS.md": f"{RULE}\n"})
    run(tmp_path, wf, {"boss": [Reply("Done.")]})
    spec = yaml.safe_load(wf.read_text()) | {"instructions": "project"}
    write_files(tmp_path, {"wf.yaml": spec})
    replayed = run_cli(["replay", str(tmp_path / "runs" / "r"), "--diff"], cwd=tmp_path)
    out = replayed.stdout + replayed.stderr
    assert replayed.returncode != 0, out
    assert "its system prompt differs from the recording" in out
    assert "project instructions added: AGENTS.md" in out
