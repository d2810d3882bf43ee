"""The hook events past the tool calls, through the CLI against the scripted server: a
SubagentStop hook making a sub-agent go on, SessionStart adding context and SessionEnd told the
status, Notification told of a decision that waits, a PreToolUse `ask` answered by `flowrun
approve` with the hook's outcome reused on resume (the hook ran once), `continue: false`
stopping the run, and Claude Code's events and hook types flowrun does not run read with a
warning and skipped, so a public agent file runs unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli
from support.env import WIRES, model_env
from support.runs import events as events_of
from support.wire_server import Reply, Script, WireServer, call
from test_hooks import hook_events, run, write

WAITING = 75
BOSS = "You are the boss"
HELPER = "You are the helper"
WORKFLOW = """version: 1
kind: workflow
name: team
default_model: anthropic:claude-sonnet-4-5
entry: {entry}
task: "Write the notes."
limits: {{max_total_steps: 40}}
"""
# a hook that appends the JSON it read, one line per run, to a log outside the run folder
LOG_INPUT = "cat >> {log}; echo >> {log}"


def agents(project: Path, helper_tools: str = "[write_file]") -> None:
    write(
        project / "agents.d" / "boss.yaml",
        f"version: 1\nkind: agent\nname: boss\nprompt: {BOSS}.\ntools: [helper]\n",
    )
    write(
        project / "agents.d" / "helper.yaml",
        f"version: 1\nkind: agent\nname: helper\ndescription: Writes notes.\nprompt: {HELPER}.\n"
        f"tools: {helper_tools}\n",
    )


def team(tmp_path: Path, hooks: str, entry: str = "boss", helper_tools: str = "[write_file]") -> Path:
    project = tmp_path / "project"
    agents(project, helper_tools)
    return write(project / "team.yaml", WORKFLOW.format(entry=entry) + hooks)


def logged(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []


@pytest.mark.parametrize("provider", WIRES)
def test_a_subagent_stop_hook_makes_the_sub_agent_go_on(tmp_path: Path, provider: str) -> None:
    hooks = """
hooks:
  SubagentStop:
    - hooks:
        - command: >-
            grep -q '"stop_hook_active": *true' && exit 0;
            echo 'Add a title line first.' >&2; exit 2
"""
    workflow = team(tmp_path, hooks)
    script = Script(
        {
            BOSS: [Reply(tool_calls=[call("helper", task="Write the notes.")]), Reply(text="Done.")],
            HELPER: [Reply(text="notes"), Reply(text="# Notes\nnotes")],
        }
    )
    with WireServer(script) as server:
        proc = run(workflow, server, provider, "sub")
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    helper = [r for r in requests if HELPER in r.system]
    # exit 2: the helper read the hook's stderr as a new message and answered again
    assert len(helper) == 2 and helper[1].last_user_text == "Add a title line first."
    boss_last = [r for r in requests if BOSS in r.system][-1]
    assert "# Notes" in boss_last.tool_results[-1][1]  # the caller got the second answer
    seen = [(h["event"], h["decision"], h["agent"]) for h in hook_events(tmp_path / "runs" / "sub")]
    assert seen == [("SubagentStop", "block", "helper"), ("SubagentStop", "none", "helper")]


def test_session_start_adds_context_and_session_end_is_told_the_status(tmp_path: Path) -> None:
    log = tmp_path / "session.log"
    hooks = f"""
sandbox: {{mode: off}}
hooks:
  SessionStart:
    - matcher: startup
      hooks:
        - command: "{LOG_INPUT.format(log=log)}; echo 'Today is release day.'"
  SessionEnd:
    - hooks:
        - command: "{LOG_INPUT.format(log=log)}"
"""
    workflow = team(tmp_path, hooks, entry="helper")
    script = Script({HELPER: [Reply(text="ok")]})
    with WireServer(script) as server:
        proc = run(workflow, server, "anthropic", "sess")
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # SessionStart's plain stdout is context the workflow's agent reads with its first message
    assert "Today is release day." in requests[0].last_user_text
    start, end = logged(log)
    assert start["hook_event_name"] == "SessionStart" and start["source"] == "startup"
    assert start["session_id"] == "sess"
    assert end["hook_event_name"] == "SessionEnd" and end["reason"] == "completed"
    assert [h["event"] for h in hook_events(tmp_path / "runs" / "sess")] == ["SessionStart", "SessionEnd"]


@pytest.mark.parametrize("provider", WIRES)
def test_a_pre_tool_use_ask_waits_notifies_and_is_reused_on_resume(tmp_path: Path, provider: str) -> None:
    log = tmp_path / "asked.log"
    hooks = f"""
sandbox: {{mode: off}}
hooks:
  PreToolUse:
    - matcher: write_file
      hooks:
        - command: >-
            {LOG_INPUT.format(log=log)};
            echo '{{"hookSpecificOutput": {{"hookEventName": "PreToolUse",
            "permissionDecision": "ask", "permissionDecisionReason": "notes need a look"}}}}'
  Notification:
    - matcher: permission_prompt
      hooks:
        - command: "{LOG_INPUT.format(log=log)}"
"""
    workflow = team(tmp_path, hooks, entry="helper")
    script = Script(
        {HELPER: [Reply(tool_calls=[call("write_file", path="notes.md", content="hi\n")]), Reply(text="ok")]}
    )
    run_dir = tmp_path / "runs" / "ask"
    with WireServer(script) as server:
        first = run(workflow, server, provider, "ask")
        assert first.returncode == WAITING, first.stdout + first.stderr
        assert not (run_dir / "notes.md").exists()
        meta = json.loads((run_dir / "run.json").read_text())
        assert meta["status"] == "waiting" and meta["pending"][0]["tool"] == "write_file"
        env = model_env(server, *WIRES)
        done = run_cli(["approve", str(run_dir), "--allow", "-q"], cwd=workflow.parent, env=env)
        requests = server.requests
    assert done.returncode == 0, done.stdout + done.stderr
    assert (run_dir / "notes.md").read_text() == "hi\n"
    assert len(requests) == 2  # no model call repeated by the resume
    asked, told = logged(log)  # the hook ran once: its `ask` was reused on resume
    assert asked["hook_event_name"] == "PreToolUse" and asked["tool_input"]["path"] == "notes.md"
    assert told["hook_event_name"] == "Notification" and told["notification_type"] == "permission_prompt"
    # the resume took the decision from the log: it neither ran nor re-recorded the hook
    hooks_seen = [(h["event"], h["decision"]) for h in hook_events(run_dir)]
    assert hooks_seen == [("PreToolUse", "ask"), ("Notification", "none")]
    approvals = [e for e in events_of(run_dir) if e["type"] == "approval"]
    assert [a["approved"] for a in approvals] == [True]


def test_continue_false_stops_the_run_with_the_reason(tmp_path: Path) -> None:
    hooks = """
hooks:
  PostToolUse:
    - matcher: Write
      hooks:
        - command: "echo '{\\"continue\\": false, \\"stopReason\\": \\"the notes quota is reached\\"}'"
"""
    workflow = team(tmp_path, hooks, entry="helper")
    script = Script(
        {HELPER: [Reply(tool_calls=[call("write_file", path="notes.md", content="hi\n")]), Reply(text="ok")]}
    )
    with WireServer(script) as server:
        proc = run(workflow, server, "openai", "stop")
        requests = server.requests
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "the notes quota is reached" in proc.stderr and "Traceback" not in proc.stderr
    assert len(requests) == 1  # the run stopped before the model read the result
    meta = json.loads((tmp_path / "runs" / "stop" / "run.json").read_text())
    assert meta["status"] == "failed"
    (hook,) = hook_events(tmp_path / "runs" / "stop")
    assert hook["decision"] == "stop"


# what public collections ship in an agent's front matter besides command hooks
CLAUDE_AGENT = """---
name: careful
description: Writes notes under the collection's hooks.
tools: Write
hooks:
  PreToolUse:
    - matcher: "Write"
      hooks:
        - type: prompt
          prompt: "Is this write safe? $ARGUMENTS"
        - type: command
          command: "echo 'checked' >&2; exit 2"
          async: false
  PermissionRequest:
    - matcher: "Write"
      hooks:
        - type: command
          command: "echo allow"
  PreCompact:
    - hooks:
        - type: http
          url: "http://localhost:9/compact"
---
You are the careful agent.
"""


def test_claude_code_events_and_hook_types_flowrun_does_not_run_are_warnings(tmp_path: Path) -> None:
    project = tmp_path / "project"
    agent = write(project / ".claude" / "agents" / "careful.md", CLAUDE_AGENT)
    workflow = write(project / "careful.yaml", WORKFLOW.format(entry="careful"))
    proc = run_cli(["validate", str(workflow)], cwd=project)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    lines = agent.read_text().splitlines()

    def at(text: str) -> str:
        return f"careful.md:{lines.index(text) + 1}:"

    assert at("        - type: prompt") in out and "Claude Code's prompt hooks are not run by flowrun" in out
    assert at("          async: false") in out and "`async` is Claude Code's" in out
    assert at("  PermissionRequest:") in out and "PermissionRequest hooks have no moment" in out
    assert at("  PreCompact:") in out
    # the command hook left runs as it is: its exit 2 refuses the write
    script = Script(
        {
            "You are the careful agent": [
                Reply(tool_calls=[call("write_file", path="notes.md", content="hi\n")]),
                Reply(text="ok"),
            ]
        }
    )
    with WireServer(script) as server:
        ran = run(workflow, server, "anthropic", "c")
        requests = server.requests
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "checked" in requests[1].tool_results[-1][1]
    assert not (tmp_path / "runs" / "c" / "notes.md").exists()
    assert [h["event"] for h in hook_events(tmp_path / "runs" / "c")] == ["PreToolUse"]


def test_settings_json_with_claude_only_events_still_applies_the_rest(tmp_path: Path) -> None:
    project = tmp_path / "project"
    agents(project)
    workflow = write(project / "team.yaml", WORKFLOW.format(entry="helper"))
    settings = {
        "hooks": {
            "SubagentStart": [{"hooks": [{"type": "command", "command": "true"}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo 'Use British spelling.'"}]}],
        }
    }
    write(project / ".claude" / "settings.json", json.dumps(settings, indent=2))
    checked = run_cli(["validate", str(workflow)], cwd=project)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "settings.json:3:" in checked.stdout + checked.stderr
    with WireServer(Script({HELPER: [Reply(text="ok")]})) as server:
        proc = run(workflow, server, "openai", "w")
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert requests[0].last_user_text.endswith("Use British spelling.")
