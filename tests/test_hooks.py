"""Hooks in Claude Code's shape, through the CLI against the scripted server in both wire
formats: a Claude Code agent file's front matter hooks run as they are (a PreToolUse script
blocking `rm` with exit 2, a PostToolUse one adding context, a Stop one that blocks once), a
`.claude/settings.json` next to the workflow, a Python hook of a flowrun manifest changing a
call's input, a hook that times out, the recorded outcomes reused by replay, and `validate`
naming a bad event or matcher at its line."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli
from support.env import WIRES, model_env
from support.runs import events
from support.wire_server import Reply, Script, WireServer, call

GUARDED = "You are the guarded agent"
PLAIN = "You are the plain agent"

# the shape of the public collections' hook scripts: read the JSON on stdin, decide, exit
BLOCK_RM = r"""#!/bin/bash
# .claude/hooks/block-rm.sh: PreToolUse hook on Bash
input=$(cat)
cmd=$(printf '%s' "$input" | sed -n 's/.*"command": *"\([^"]*\)".*/\1/p')
if printf '%s' "$cmd" | grep -Eq '(^|[;&| ])rm( |$)'; then
  echo "Blocked: rm commands are not allowed here; move the file to trash/ instead" >&2
  exit 2
fi
exit 0
"""
ADD_CONTEXT = r"""#!/bin/bash
# .claude/hooks/after-write.sh: PostToolUse hook on Write|Edit
input=$(cat)
file=$(printf '%s' "$input" | sed -n 's/.*"file_path": *"\([^"]*\)".*/\1/p')
note="Remember to run the formatter on $(basename "$file")."
printf '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "%s"}}\n' "$note"
"""
STOP_ONCE = r"""#!/bin/bash
# .claude/hooks/stop-once.sh: Stop hook that asks for one more look
input=$(cat)
if printf '%s' "$input" | grep -q '"stop_hook_active": *true'; then
  exit 0
fi
echo '{"decision": "block", "reason": "Check your work once more before you answer."}'
"""
GUARDED_AGENT = """---
name: guarded
description: Runs shell commands and writes notes, under the project's hooks.
tools: Bash, Read, Write
hooks:
  PreToolUse:
    - matcher: "Bash"
      hooks:
        - type: command
          command: "\\"$CLAUDE_PROJECT_DIR\\"/.claude/hooks/block-rm.sh"
  PostToolUse:
    - matcher: "Write|Edit"
      hooks:
        - type: command
          command: "\\"$CLAUDE_PROJECT_DIR\\"/.claude/hooks/after-write.sh"
          timeout: 30
  Stop:
    - hooks:
        - type: command
          command: "\\"$CLAUDE_PROJECT_DIR\\"/.claude/hooks/stop-once.sh"
---
You are the guarded agent. Keep the workspace tidy.
"""
WORKFLOW = """version: 1
kind: workflow
name: {name}
default_model: anthropic:claude-sonnet-4-5
entry: {entry}
task: "Tidy up."
workspace:
  files:
    keep.txt: "precious\\n"
"""


def write(path: Path, text: str, executable: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def guarded_project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    write(project / ".claude" / "agents" / "guarded.md", GUARDED_AGENT)
    hooks = project / ".claude" / "hooks"
    write(hooks / "block-rm.sh", BLOCK_RM, executable=True)
    write(hooks / "after-write.sh", ADD_CONTEXT, executable=True)
    write(hooks / "stop-once.sh", STOP_ONCE, executable=True)
    return write(project / "guard.yaml", WORKFLOW.format(name="guard", entry="guarded"))


def plain_project(tmp_path: Path, extra: str = "") -> Path:
    project = tmp_path / "project"
    write(
        project / "agents.d" / "plain.yaml",
        f"version: 1\nkind: agent\nname: plain\nprompt: {PLAIN}.\ntools: [execute_shell, write_file]\n",
    )
    return write(project / "plain.yaml", WORKFLOW.format(name="plain", entry="plain") + extra)


def run(workflow: Path, server: WireServer, provider: str, run_id: str) -> Any:
    args = [str(workflow), "--runs-dir", str(workflow.parent.parent / "runs"), "--run-id", run_id]
    env = model_env(server, provider)
    if provider == "openai":
        args += ["--model", "openai:gpt-test"]
    return run_cli(args, cwd=workflow.parent, env=env)


def hook_events(run_dir: Path) -> list[dict[str, Any]]:
    return [e for e in events(run_dir) if e["type"] == "hook"]


@pytest.mark.parametrize("provider", WIRES)
def test_claude_agent_file_hooks_run_unchanged(tmp_path: Path, provider: str) -> None:
    workflow = guarded_project(tmp_path)
    script = Script(
        {
            GUARDED: [
                Reply(tool_calls=[call("execute_shell", command="rm keep.txt")]),
                Reply(tool_calls=[call("write_file", path="notes.md", content="# Notes\n")]),
                Reply(text="All tidy."),
                Reply(text="Checked again: all tidy."),
            ]
        }
    )
    with WireServer(script) as server:
        proc = run(workflow, server, provider, "g")
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = tmp_path / "runs" / "g"
    # PreToolUse: exit 2 refused the call, the model read the script's stderr, the file survives
    assert (run_dir / "keep.txt").read_text() == "precious\n"
    refused = requests[1].tool_results[-1][1]
    assert "HOOK_BLOCKED" in refused
    assert "Blocked: rm commands are not allowed here; move the file to trash/ instead" in refused
    # PostToolUse: the JSON's additionalContext reaches the model with the next request
    written = requests[2].tool_results[-1][1]
    assert "Remember to run the formatter on notes.md." in written
    assert (run_dir / "notes.md").read_text() == "# Notes\n"
    # Stop: blocked once (`decision: block`), the agent answered again, then it could stop
    assert len(requests) == 4
    assert requests[3].last_user_text == "Check your work once more before you answer."
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    hooks = hook_events(run_dir)
    assert [(h["event"], h["decision"]) for h in hooks] == [
        ("PreToolUse", "deny"),
        ("PostToolUse", "none"),
        ("Stop", "block"),
        ("Stop", "none"),
    ]
    assert hooks[0]["exit_code"] == 2 and hooks[0]["matcher"] == "Bash"
    assert hooks[0]["hook"] == "agent/guarded:PreToolUse:0:0"
    assert "block-rm.sh" in hooks[0]["command"] and hooks[0]["duration_ms"] > 0
    assert all(h["agent"] == "guarded" for h in hooks)
    shown = run_cli(["show", str(run_dir)], cwd=tmp_path).stdout
    assert "hook PreToolUse" in shown and "exit 2 → deny: Blocked: rm commands" in shown


def test_replay_reuses_recorded_hook_outcomes(tmp_path: Path) -> None:
    workflow = guarded_project(tmp_path)
    script = Script(
        {
            GUARDED: [
                Reply(tool_calls=[call("execute_shell", command="rm keep.txt")]),
                Reply(text="Done."),
                Reply(text="Done, checked."),
            ]
        }
    )
    with WireServer(script) as server:
        assert run(workflow, server, "anthropic", "r").returncode == 0
    # the hooks now would answer otherwise: a replay must not run them
    hooks = workflow.parent / ".claude" / "hooks"
    write(hooks / "block-rm.sh", "#!/bin/bash\nexit 0\n", executable=True)
    write(hooks / "stop-once.sh", "#!/bin/bash\nexit 0\n", executable=True)
    replay = tmp_path / "replayed"
    proc = run_cli(["replay", str(tmp_path / "runs" / "r"), "--into", str(replay)], cwd=workflow.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    hooks_seen = hook_events(replay)
    assert [(h["event"], h["decision"], h.get("replayed")) for h in hooks_seen] == [
        ("PreToolUse", "deny", True),
        ("Stop", "block", True),
        ("Stop", "none", True),
    ]
    assert (replay / "keep.txt").read_text() == "precious\n"


SETTINGS = {
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "echo 'House rule: never delete files.'"}]}
        ],
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {
                        "type": "command",
                        "command": 'grep -q \'"command": *"rm \' && '
                        "{ echo 'no rm in this project' >&2; exit 2; } || exit 0",
                    }
                ],
            }
        ],
    },
}


@pytest.mark.parametrize("provider", WIRES)
def test_claude_settings_json_hooks_apply(tmp_path: Path, provider: str) -> None:
    workflow = plain_project(tmp_path)
    write(workflow.parent / ".claude" / "settings.json", json.dumps(SETTINGS, indent=2))
    script = Script(
        {PLAIN: [Reply(tool_calls=[call("execute_shell", command="rm -f keep.txt")]), Reply(text="ok")]}
    )
    with WireServer(script) as server:
        proc = run(workflow, server, provider, "s")
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # UserPromptSubmit: plain stdout on exit 0 is context the agent reads with its task
    assert requests[0].last_user_text == "Tidy up.\n\nHouse rule: never delete files."
    assert "no rm in this project" in requests[1].tool_results[-1][1]
    assert (tmp_path / "runs" / "s" / "keep.txt").exists()
    scopes = [h["hook"] for h in hook_events(tmp_path / "runs" / "s")]
    assert scopes == ["settings:UserPromptSubmit:0:0", "settings:PreToolUse:0:0"]


PYTHON_HOOKS = """
hooks:
  PreToolUse:
    - matcher: write_file
      hooks:
        - python: project_hooks:to_drafts
"""
PYTHON_MODULE = '''
def to_drafts(event):
    """Every file an agent writes goes to drafts/; its own name is kept."""
    path = event["tool_input"]["path"]
    assert event["hook_event_name"] == "PreToolUse" and event["tool_name"] == "write_file"
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": {"path": "drafts/" + path.split("/")[-1]},
        }
    }
'''


@pytest.mark.parametrize("provider", WIRES)
def test_python_hook_of_a_flowrun_manifest_updates_the_input(tmp_path: Path, provider: str) -> None:
    workflow = plain_project(tmp_path, PYTHON_HOOKS)
    write(workflow.parent / "project_hooks.py", PYTHON_MODULE)
    script = Script({PLAIN: [Reply(tool_calls=[call("write_file", path="report.md", content="hi\n")])]})
    with WireServer(script) as server:
        proc = run(workflow, server, provider, "p")
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = tmp_path / "runs" / "p"
    assert (run_dir / "drafts" / "report.md").read_text() == "hi\n"
    assert not (run_dir / "report.md").exists()
    assert "drafts/report.md" in requests[1].tool_results[-1][1]
    (hook,) = hook_events(run_dir)
    assert hook["hook"] == "workflow:PreToolUse:0:0" and hook["command"] == "python project_hooks:to_drafts"
    assert hook["decision"] == "allow"


def test_a_hook_that_times_out_blocks_and_says_why(tmp_path: Path) -> None:
    slow = """
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - command: "sleep 30"
          timeout: 1
"""
    workflow = plain_project(tmp_path, slow)
    script = Script(
        {PLAIN: [Reply(tool_calls=[call("execute_shell", command="echo hi > made.txt")]), Reply(text="ok")]}
    )
    with WireServer(script) as server:
        proc = run(workflow, server, "openai", "t")
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = requests[1].tool_results[-1][1]
    assert "HOOK_BLOCKED" in text
    assert "the PreToolUse hook `sleep 30` failed (timed out after 1 s), so this is blocked" in text
    assert not (tmp_path / "runs" / "t" / "made.txt").exists()
    (hook,) = hook_events(tmp_path / "runs" / "t")
    assert hook["failure"] == "timed out after 1 s" and hook["decision"] == "deny"


def test_a_hook_answer_nested_too_deep_is_plain_output(tmp_path: Path) -> None:
    """A hook that prints JSON 5,000 levels deep (echoing a model's arguments, say) had broken
    the stack reading it: it is output that is not JSON, and the call goes on."""
    deep = """
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - command: '"$CLAUDE_PROJECT_DIR"/deep.sh'
"""
    workflow = plain_project(tmp_path, deep)
    write(
        workflow.parent / "deep.sh",
        "#!/bin/sh\nprintf '{\"a\": '\nhead -c 5000 /dev/zero | tr '\\0' '['\n"
        "head -c 5000 /dev/zero | tr '\\0' ']'\necho '}'\n",
        executable=True,
    )
    script = Script(
        {PLAIN: [Reply(tool_calls=[call("execute_shell", command="echo hi > made.txt")]), Reply(text="ok")]}
    )
    with WireServer(script) as server:
        proc = run(workflow, server, "openai", "d")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "runs" / "d" / "made.txt").read_text() == "hi\n"
    (hook,) = hook_events(tmp_path / "runs" / "d")
    assert hook["decision"] == "none"


def test_a_user_prompt_hook_can_refuse_the_task(tmp_path: Path) -> None:
    refuse = """
hooks:
  UserPromptSubmit:
    - hooks:
        - command: "echo 'tasks need a ticket number' >&2; exit 2"
"""
    workflow = plain_project(tmp_path, refuse)
    with WireServer(Script({PLAIN: []})) as server:
        proc = run(workflow, server, "anthropic", "u")
        requests = server.requests
    assert proc.returncode == 1
    assert "a UserPromptSubmit hook refused the task of plain: tasks need a ticket number" in proc.stderr
    assert requests == []  # the model never saw the task


def test_validate_names_a_bad_event_and_matcher_at_their_line(tmp_path: Path) -> None:
    workflow = guarded_project(tmp_path)
    agent = workflow.parent / ".claude" / "agents" / "guarded.md"
    agent.write_text(agent.read_text().replace("  PostToolUse:", "  PostToolUs:"))
    bad_matcher = """
hooks:
  PreToolUse:
    - matcher: "Bash("
      hooks:
        - command: "true"
"""
    workflow.write_text(workflow.read_text() + bad_matcher)
    proc = run_cli(["validate", str(workflow)], cwd=workflow.parent)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "guarded.md:11:3" in out and "unknown key 'PostToolUs'" in out
    assert "did you mean 'PostToolUse'" in out
    line = workflow.read_text().splitlines().index('    - matcher: "Bash("') + 1
    assert f"guard.yaml:{line}:" in out and "matcher 'Bash(' is not a regular expression" in out
