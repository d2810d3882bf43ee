"""Claude Code subagent files and Agent Skills used as they are: the example's verbatim files
(examples/claude_code/) in a dry run and against the scripted server in both wire formats, the
mapping of the front matter, and the typo cases at their line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.cli import run_cli
from support.env import WIRES, model_env
from support.paths import REPO
from support.runs import events as events_of
from support.wire_server import Reply, Script, WireServer, call

import flowrun

EXAMPLE = REPO / "examples" / "claude_code"
LEAD = "You lead a bug investigation"
DEBUGGER = "You are a hypothesis-driven debugging investigator"


def copy_example(tmp_path: Path) -> Path:
    target = tmp_path / "claude_code"
    shutil.copytree(EXAMPLE, target)
    return target / "claude_code.yaml"


def test_verbatim_files_are_unchanged() -> None:
    agent = (EXAMPLE / ".claude" / "agents" / "team-debugger.md").read_text()
    assert agent.startswith("---\nname: team-debugger\n")
    assert "MIT License" in (EXAMPLE / ".claude" / "agents" / "LICENSE").read_text()
    skill = EXAMPLE / ".claude" / "skills" / "webapp-testing"
    assert "Apache License" in (skill / "LICENSE.txt").read_text()
    assert (skill / "scripts" / "with_server.py").is_file()


def test_example_dry_run(tmp_path: Path) -> None:
    workflow = copy_example(tmp_path)
    proc = run_cli(
        [
            str(workflow),
            "--bug",
            "login hangs",
            "--dry-run",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--run-id",
            "d",
        ],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    events = events_of(tmp_path / "runs" / "d")
    starts = {e["agent"] for e in events if e["type"] == "agent_start"}
    assert starts == {"lead", "team-debugger"}
    debugger_tools = {e["tool"] for e in events if e["type"] == "tool_call" and e["agent"] == "team-debugger"}
    assert {"read_file", "glob", "grep", "execute_shell"} <= debugger_tools
    script = [e["result"] for e in events if e["type"] == "tool_result" and e["tool"] == "run_skill_script"]
    # the skill's script really ran (in the sandbox): the dry run asks it for --help
    assert script and script[0]["data"]["exit_code"] == 0
    assert "usage: with_server.py" in script[0]["data"]["stdout"]


def responder_replies() -> Script:
    lead = [
        Reply(tool_calls=[call("use_skill", skill="webapp-testing")]),
        Reply(
            tool_calls=[
                call(
                    "run_skill_script",
                    skill="webapp-testing",
                    script="scripts/with_server.py",
                    args=["--help"],
                )
            ]
        ),
        Reply(tool_calls=[call("team-debugger", task="Hypothesis: the submit handler never resolves.")]),
        Reply(tool_calls=[call("write_file", path="findings.md", content="# Findings\n\nConfirmed.\n")]),
        Reply(text="Findings written."),
    ]
    debugger = [
        Reply(tool_calls=[call("grep", pattern="submit", path=".")]),
        Reply(text="Confirmed with high confidence: the handler never resolves."),
    ]
    return Script({LEAD: lead, DEBUGGER: debugger})


@pytest.mark.parametrize("provider", WIRES)
def test_example_against_the_wire_server(tmp_path: Path, provider: str) -> None:
    workflow = copy_example(tmp_path)
    with WireServer(responder_replies()) as server:
        args = [str(workflow), "--bug", "login hangs", "--runs-dir", str(tmp_path / "runs"), "--run-id", "w"]
        env = model_env(server, provider)
        if provider == "openai":
            args += ["--model", "openai:gpt-test"]
        proc = run_cli(args, cwd=tmp_path, env=env)
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    debugger = [r for r in requests if DEBUGGER in r.system]
    assert debugger, "the subagent's body is its system prompt"
    assert "## Investigation Protocol" in debugger[0].system  # the body, verbatim
    assert set(debugger[0].tool_names) == {
        "read_file",
        "glob",
        "grep",
        "execute_shell",
        "get_shell_output",
        "kill_shell",
    }
    if provider == "anthropic":  # model: opus maps to Anthropic's model (openai: --model overrides)
        assert debugger[0].body["model"] == "claude-opus-4-1"
    lead = [r for r in requests if LEAD in r.system]
    skill_text = lead[1].tool_results[-1][1]
    assert "# Skill: webapp-testing" in skill_text and "scripts/with_server.py" in skill_text
    help_text = lead[2].tool_results[-1][1]
    assert "Run command with one or more servers" in help_text  # argparse --help, run in the sandbox
    assert "Confirmed with high confidence" in lead[3].tool_results[-1][1]
    assert (tmp_path / "runs" / "w" / "findings.md").read_text().startswith("# Findings")


# ---------------------------------------------------------------- the front matter


def write_agent(folder: Path, text: str, name: str = "helper") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(text)
    return path


WORKFLOW = """version: 1
kind: workflow
name: w
models: {m: {provider: test, model: t}}
default_model: m
entry: helper
"""


def test_typos_are_errors_at_their_line_and_ignored_keys_warnings(tmp_path: Path) -> None:
    write_agent(
        tmp_path / ".claude" / "agents",
        "---\n"
        "name: helper\n"
        "description: Helps.\n"
        "allowed-tools: Read, Grep\n"
        "max_turns: 5\n"
        "allowedTools: [Read]\n"
        "color: blue\n"
        "isolation: worktree\n"
        "permissionMode: plna\n"
        "---\n"
        "You help.\n",
    )
    (tmp_path / "w.yaml").write_text(WORKFLOW)
    proc = run_cli(["validate", str(tmp_path)], cwd=tmp_path)
    out = proc.stdout
    assert proc.returncode == 1, out
    path = ".claude/agents/helper.md"
    assert f"{path}:4:1: error[unknown-key]: unknown key 'allowed-tools'" in out
    assert "did you mean 'tools'?" in out
    assert (
        f"{path}:5:1: error[unknown-key]: unknown key 'max_turns'" in out
        and "did you mean 'maxTurns'?" in out
    )
    assert f"{path}:6:1: error[unknown-key]: unknown key 'allowedTools'" in out
    assert f"{path}:7:" not in out  # `color` only draws the agent in Claude Code: nothing to report
    assert f"{path}:8:1: warning[ignored-key]: 'isolation'" in out  # (`memory` is used: test_memory.py)
    assert (
        f"{path}:9:17: error[bad-value]: 'plna' is not a permission mode" in out
        and "did you mean 'plan'?" in out
    )
    assert "Traceback" not in proc.stdout + proc.stderr


def test_front_matter_maps_onto_the_agent(tmp_path: Path) -> None:
    write_agent(
        tmp_path / "agents.d",  # agents.d/*.md works too
        "---\n"
        "name: helper\n"
        "description: Reviews code.\n"
        "tools: Read, Edit, Bash(git diff:*), mcp__calc__add, Task(scout), TodoWrite\n"
        "disallowedTools: Edit\n"
        "model: haiku\n"
        "maxTurns: 7\n"
        "skills: [report-writing]\n"
        "permissionMode: acceptEdits\n"
        "mcpServers:\n"
        "  - calc: {command: python3, args: [calc.py]}\n"
        "---\n"
        "Review {{ carefully }} and {% raw %} as written.\n",
    )
    write_agent(
        tmp_path / ".claude" / "agents", "---\nname: scout\ndescription: Looks around.\n---\nLook.\n", "scout"
    )
    (tmp_path / "w.yaml").write_text(WORKFLOW)
    wf = flowrun.load(tmp_path / "w.yaml")
    spec = wf.project.agents["helper"].spec
    assert spec.description == "Reviews code."
    assert spec.model == "anthropic:claude-haiku-4-5"
    assert spec.max_steps == 7
    entries = {
        e if isinstance(e, str) else next(iter(e)): (e if isinstance(e, dict) else {}) for e in spec.tools
    }
    assert "edit_file" not in entries  # disallowed
    assert entries["execute_shell"] == {"execute_shell": {"allow": ["git diff *"], "approve": "ask"}}
    assert {"read_file", "calc.add", "scout", "calc", "use_skill", "run_skill_script"} <= set(entries)
    assert entries["use_skill"] == {"use_skill": {"skills": ["report-writing"]}}
    assert "calc" in wf.project.mcp_servers  # the inline declaration joined the project


def test_body_is_the_prompt_as_written(tmp_path: Path) -> None:
    body = "Review {{ carefully }} and {% raw %} and {% endraw %} as written."
    write_agent(
        tmp_path / ".claude" / "agents", f"---\nname: helper\ndescription: D.\ntools: Read\n---\n{body}\n"
    )
    (tmp_path / "w.yaml").write_text(
        WORKFLOW.replace("{provider: test, model: t}", "{provider: openai, model: t}")
    )
    with WireServer(Script({"Review": [Reply(text="ok")]})) as server:
        env = model_env(server, "openai")
        proc = run_cli(
            [str(tmp_path / "w.yaml"), "--runs-dir", str(tmp_path / "runs")], cwd=tmp_path, env=env
        )
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert requests[0].system == body
    assert requests[0].tool_names == ["read_file"]


def test_plan_mode_keeps_only_read_only_tools(tmp_path: Path) -> None:
    write_agent(
        tmp_path / ".claude" / "agents",
        "---\nname: helper\ndescription: Plans.\npermissionMode: plan\n---\nPlan.\n",
    )
    (tmp_path / "w.yaml").write_text(WORKFLOW)
    spec = flowrun.load(tmp_path / "w.yaml").project.agents["helper"].spec
    names = {e if isinstance(e, str) else next(iter(e)) for e in spec.tools}
    assert names == {"read_file", "glob", "grep", "list_directory", "web_search", "visit_url", "use_skill"}


def test_model_alias_names_a_workflow_model_of_that_name(tmp_path: Path) -> None:
    write_agent(
        tmp_path / ".claude" / "agents", "---\nname: helper\ndescription: D.\nmodel: opus\n---\nHelp.\n"
    )
    (tmp_path / "w.yaml").write_text(
        WORKFLOW.replace("models: {m:", "models: {opus: {provider: test, model: big}, m:")
    )
    spec = flowrun.load(tmp_path / "w.yaml").project.agents["helper"].spec
    assert spec.model == "opus"


BROKEN = (
    "---\nname: broken\n"
    "description: Use this agent when: the user asks. Examples: <example>x</example>\n---\nBroken.\n"
)
TYPO = "---\nname: typo\ndescription: Has a typo.\nmax_turns: 3\n---\nTypo.\n"


def test_a_broken_agent_file_is_skipped_unless_used(tmp_path: Path) -> None:
    """Public collections hold files flowrun cannot read (an unquoted ': ' in a description):
    each is a warning and skipped, and fails only the workflow or agent that uses it."""
    agents = tmp_path / ".claude" / "agents"
    write_agent(agents, "---\nname: helper\ndescription: Helps.\ntools: Read\n---\nYou help.\n")
    write_agent(agents, BROKEN, "broken")
    write_agent(agents, TYPO, "typo")
    (tmp_path / "w.yaml").write_text(WORKFLOW)

    proc = run_cli(["validate", str(tmp_path)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert (
        ".claude/agents/broken.md:3:33: warning[skipped-agent]: Claude Code agent 'broken' skipped: "
        in proc.stdout
    )
    assert (
        ".claude/agents/typo.md:4:1: warning[skipped-agent]: Claude Code agent 'typo' skipped: "
        in proc.stdout
    )
    args = [str(tmp_path / "w.yaml"), "--dry-run", "--runs-dir", str(tmp_path / "runs"), "--run-id", "d"]
    proc = run_cli(args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2 and "broken.md:3:33" in warnings[0] and "typo.md:4:1" in warnings[1], (
        proc.stderr
    )

    # used as the entry: its problems are errors again, and the run stops on them
    (tmp_path / "w.yaml").write_text(WORKFLOW.replace("entry: helper", "entry: typo"))
    proc = run_cli([*args[:-1], "d2"], cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert ".claude/agents/typo.md:4:1: error[unknown-key]: unknown key 'max_turns'" in proc.stderr
    assert "broken.md" not in proc.stderr  # the other one still fails alone
    # used by an agent (Task(NAME)): the same
    (tmp_path / "w.yaml").write_text(WORKFLOW)
    write_agent(agents, "---\nname: helper\ndescription: Helps.\ntools: Read, Task(broken)\n---\nHelp.\n")
    proc = run_cli(["validate", str(tmp_path)], cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout
    assert ".claude/agents/broken.md:3:33: error[" in proc.stdout, proc.stdout
    assert "warning[skipped-agent]: Claude Code agent 'typo' skipped" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_an_unknown_model_is_a_validate_error_at_its_line(tmp_path: Path) -> None:
    """`model: fable` would fail the run's first call: validate says so at the key; a full
    Claude model id is the Anthropic model of that id."""
    agents = tmp_path / ".claude" / "agents"
    write_agent(agents, "---\nname: helper\ndescription: Helps.\nmodel: fable\n---\nYou help.\n")
    proc = run_cli(["validate", str(tmp_path / ".claude")], cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout
    assert ".claude/agents/helper.md:4:8: error[unknown-model]: unknown model 'fable'" in proc.stdout
    write_agent(agents, "---\nname: helper\ndescription: Helps.\nmodel: claude-opus-4-5\n---\nYou help.\n")
    (tmp_path / "w.yaml").write_text(WORKFLOW)
    spec = flowrun.load(tmp_path / "w.yaml").project.agents["helper"].spec
    assert spec.model == "anthropic:claude-opus-4-5"
