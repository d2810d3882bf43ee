"""The agent loop through `flowrun run`, with the scripted provider and real tools: concurrency,
bad tool calls, limits, stop patterns, overrides, and adding roles by YAML alone."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cli import run_cli
from support.paths import REPO
from support.project import script_manifest, write_project
from support.runs import events

WORKFLOW = """\
version: 1
kind: workflow
name: t
inputs:
  question: {description: q}
models:
  s: {provider: scripted, model: s, script: script.yaml, price: {input: 1.0, output: 2.0}}
default_model: s
entry: boss
output: out.md
"""

SLEEP_TOOL = """\
version: 1
kind: tool
name: nap
description: Sleep for a while.
parameters:
  type: object
  properties: {seconds: {type: number}}
  required: [seconds]
implementation:
  command: ["sleep", "{{ seconds }}"]
"""


def project(
    tmp: Path, boss: dict[str, Any], script: dict[str, Any], extra: dict[str, str] | None = None
) -> Path:
    files = {"tools.d/nap.yaml": SLEEP_TOOL, "script.yaml": script_manifest(script), **(extra or {})}
    write_project(tmp, WORKFLOW, {"boss": {"prompt": "You are boss.", **boss}}, files)
    return tmp


def run(tmp: Path, *extra: str) -> tuple[int, str, Path]:
    proc = run_cli(["wf.yaml", "--question", "q", "--run-id", "r", *extra], cwd=tmp)
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out
    return proc.returncode, out, tmp / "runs" / "r"


def results(run_dir: Path, tool: str) -> list[dict[str, Any]]:
    return [e["result"] for e in events(run_dir) if e["type"] == "tool_result" and e["tool"] == tool]


def test_three_tool_calls_run_concurrently(tmp_path: Path) -> None:
    naps = [{"name": "nap", "arguments": {"seconds": 0.5}} for _ in range(3)]
    project(tmp_path, {"tools": ["nap"]}, {"boss": [{"tool_calls": naps}, {"text": "rested"}]})
    code, out, run_dir = run(tmp_path)
    assert code == 0, out
    evs = events(run_dir)
    starts = [e["t"] for e in evs if e["type"] == "tool_call"]
    ends = [e["t"] for e in evs if e["type"] == "tool_result"]
    assert len(starts) == len(ends) == 3
    # every call started before any finished: they overlapped
    assert max(starts) < min(ends)
    assert all(r["status"] == "success" for r in results(run_dir, "nap"))


def test_malformed_arguments_become_an_error_the_model_recovers_from(tmp_path: Path) -> None:
    script = {
        "boss": [
            {"tool_calls": [{"name": "write_file", "arguments": '{"path": "out.md", "content": '}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "out.md"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "out.md", "content": "fixed"}}]},
            {"text": "done"},
        ]
    }
    project(tmp_path, {"tools": ["write_file"]}, script)
    code, out, run_dir = run(tmp_path)
    assert code == 0, out
    first, second, third = results(run_dir, "write_file")
    assert first["status"] == "error" and first["error"]["code"] == "INVALID_PARAM"
    assert "not valid JSON" in first["text"]
    assert second["error"]["code"] == "INVALID_PARAM" and "content" in second["text"]
    assert third["status"] == "success"
    assert (run_dir / "out.md").read_text() == "fixed"


def test_unknown_tool_name_is_an_error_result(tmp_path: Path) -> None:
    script = {"boss": [{"tool_calls": [{"name": "rm_rf", "arguments": {}}]}, {"text": "ok"}]}
    project(tmp_path, {"tools": ["nap"]}, script)
    code, out, run_dir = run(tmp_path)
    assert code == 0, out
    (result,) = results(run_dir, "rm_rf")
    assert result["error"]["code"] == "UNKNOWN_TOOL" and "nap" in result["text"]


def test_max_steps_is_a_clear_status(tmp_path: Path) -> None:
    loop = [{"tool_calls": [{"name": "nap", "arguments": {"seconds": 0}}]}] * 5
    project(tmp_path, {"tools": ["nap"], "max_steps": 3}, {"boss": loop})
    code, out, run_dir = run(tmp_path)
    assert code == 3
    assert "status: max_steps" in out
    assert json.loads((run_dir / "run.json").read_text())["status"] == "max_steps"
    assert sum(e["type"] == "model_request" for e in events(run_dir)) == 3


def test_stop_pattern_ends_the_agent(tmp_path: Path) -> None:
    script = {
        "boss": [
            {
                "text": "Working on it, DONE is not yet",
                "tool_calls": [{"name": "nap", "arguments": {"seconds": 0}}],
            },
            {"text": "All good.\nDONE"},
            {"text": "never reached"},
        ]
    }
    boss = {"tools": ["nap"], "stop": {"pattern": r"\bDONE\b\s*$", "on_text": False}}
    project(tmp_path, boss, script)
    code, out, run_dir = run(tmp_path)
    assert code == 0, out
    end = next(e for e in events(run_dir) if e["type"] == "agent_end")
    assert end["status"] == "stopped" and end["steps"] == 2


def test_budget_on_steps_stops_cleanly(tmp_path: Path) -> None:
    loop = [{"tool_calls": [{"name": "nap", "arguments": {"seconds": 0}}]}] * 10
    wf = WORKFLOW + "limits: {max_total_steps: 2}\n"
    project(tmp_path, {"tools": ["nap"]}, {"boss": loop}, {"wf.yaml": wf})
    code, out, run_dir = run(tmp_path)
    assert code == 4 and "budget_exceeded" in out
    assert json.loads((run_dir / "run.json").read_text())["status"] == "budget_exceeded"


def test_usage_and_cost_are_reported(tmp_path: Path) -> None:
    project(tmp_path, {}, {"boss": [{"text": "x" * 400}]})
    code, out, run_dir = run(tmp_path)
    assert code == 0, out
    usage = json.loads((run_dir / "usage.json").read_text())
    (line,) = usage["by_agent_model"]
    assert line["agent"] == "boss" and line["model"] == "s" and line["calls"] == 1
    expected = (line["usage"]["input_tokens"] * 1.0 + line["usage"]["output_tokens"] * 2.0) / 1e6
    assert line["cost_usd"] == pytest.approx(expected)
    assert "total tokens" in out


def test_model_override_applies_to_every_agent(tmp_path: Path) -> None:
    helper = "version: 1\nkind: agent\nname: helper\ndescription: helps\nprompt: help\nmodel: s\n"
    script = {"boss": [{"tool_calls": [{"name": "helper", "arguments": {"task": "help"}}]}, {"text": "ok"}]}
    project(tmp_path, {"tools": ["helper"]}, script, {"agents.d/helper.yaml": helper})
    code, out, run_dir = run(tmp_path, "--dry-run")
    assert code == 0, out
    models = {e["model"] for e in events(run_dir) if e["type"] == "model_request"}
    assert models == {"test"}
    code, out, run_dir2 = (
        run_cli(
            ["wf.yaml", "--question", "q", "--run-id", "r2", "--model", "test:any"], cwd=tmp_path
        ).returncode,
        "",
        tmp_path / "runs" / "r2",
    )
    assert code == 0
    assert {e["model"] for e in events(run_dir2) if e["type"] == "model_request"} == {"test:any"}


def test_reviewer_role_added_by_yaml_alone(tmp_path: Path) -> None:
    """A project drops agents.d/reviewer.yaml and a local orchestrator.yaml next to a workflow
    that uses the built-in roster: the reviewer is offered, and the local orchestrator wins."""
    reviewer = """\
    version: 1
    kind: agent
    name: reviewer
    description: Reviews the report for unsupported claims.
    prompt: You are the reviewer.
    tools: [read_file]
    """
    orchestrator = """\
    version: 1
    kind: agent
    name: orchestrator
    extends: orchestrator
    prompt: You are the local orchestrator. Question in question.txt.
    tools: [read_file, write_file, searcher, writer, reviewer]
    """
    research = (REPO / "examples" / "research.yaml").read_text()
    files = {
        "research.yaml": research,
        "agents.d/reviewer.yaml": reviewer,
        "agents.d/orchestrator.yaml": orchestrator,
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(textwrap.dedent(text))
    proc = run_cli(["validate", "--strict", "."], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    proc = run_cli(["research.yaml", "--question", "q", "--dry-run", "--run-id", "r"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    evs = events(tmp_path / "runs" / "r")
    first = next(e for e in evs if e["type"] == "model_request" and e["agent"] == "orchestrator")
    assert "reviewer" in first["tools"] and "analyzer" not in first["tools"]
    started = {e["agent"] for e in evs if e["type"] == "agent_start"}
    assert "reviewer" in started
    # the local orchestrator inherited max_steps from the built-in it extends
    assert sum(e["type"] == "model_request" and e["agent"] == "orchestrator" for e in evs) <= 40


@pytest.mark.parametrize("example", sorted(p.name for p in (REPO / "examples").glob("*.yaml")))
def test_dry_run_every_example(tmp_path: Path, example: str) -> None:
    spec = yaml.safe_load((REPO / "examples" / example).read_text())
    inputs = []
    for name, declared in (spec.get("inputs") or {}).items():
        value = {"integer": "2", "number": "1.5", "boolean": "true"}.get(
            (declared or {}).get("type", ""), "How does sorting work?"
        )
        inputs += [f"--{name}", value]
    proc = run_cli(
        [
            str(REPO / "examples" / example),
            *inputs,
            "--dry-run",
            "--runs-dir",
            str(tmp_path),
            "--run-id",
            "r",
        ],
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = tmp_path / "r"
    evs = events(run_dir)
    assert evs[0]["type"] == "run_start" and evs[-1]["type"] == "run_end"
    assert evs[-1]["status"] == "completed"
    if spec.get("output"):
        assert (run_dir / spec["output"]).exists()


def test_inputs_are_checked(tmp_path: Path) -> None:
    project(tmp_path, {}, {"boss": [{"text": "ok"}]})
    proc = run_cli(["wf.yaml"], cwd=tmp_path)
    assert proc.returncode == 2 and "missing --question" in proc.stderr
    proc = run_cli(["wf.yaml", "--question", "q", "--topic", "x"], cwd=tmp_path)
    assert proc.returncode == 2 and "unknown option --topic" in proc.stderr and "--question" in proc.stderr
    proc = run_cli(["wf.yaml", "--help"], cwd=tmp_path)
    assert proc.returncode == 0 and "--question" in proc.stdout


def test_tools_cannot_touch_engine_files(tmp_path: Path) -> None:
    script = {
        "boss": [
            {
                "tool_calls": [
                    {
                        "name": "write_file",
                        "arguments": {"path": "events.jsonl", "content": "x", "mode": "overwrite"},
                    }
                ]
            },
            {"text": "ok"},
        ]
    }
    project(tmp_path, {"tools": ["write_file"]}, script)
    code, out, run_dir = run(tmp_path)
    assert code == 0, out
    (result,) = results(run_dir, "write_file")
    assert result["status"] == "error"
    assert events(run_dir)[0]["type"] == "run_start"


def test_declarative_command_tool_runs_and_is_permission_checked(tmp_path: Path) -> None:
    count = """\
    version: 1
    kind: tool
    name: count_lines
    description: Count the lines of a workspace file.
    parameters:
      type: object
      properties: {path: {type: string}}
      required: [path]
    implementation:
      command: ["wc", "-l", "{{ path }}"]
    """
    script = {
        "boss": [
            {"tool_calls": [{"name": "count_lines", "arguments": {"path": "lines.txt"}}]},
            {"tool_calls": [{"name": "count_lines", "arguments": {"path": "secret.txt"}}]},
            {"text": "counted"},
        ]
    }
    wf = WORKFLOW + 'workspace:\n  files:\n    lines.txt: "a\\nb\\nc\\n"\n    secret.txt: "x\\n"\n'
    boss = {"tools": [{"count_lines": {"deny": ["wc -l secret*"]}}]}
    project(tmp_path, boss, script, {"tools.d/count_lines.yaml": count, "wf.yaml": wf})
    assert run_cli(["validate", "--strict", "."], cwd=tmp_path).returncode == 0
    code, out, run_dir = run(tmp_path)
    assert code == 0, out
    allowed, denied = results(run_dir, "count_lines")
    assert allowed["status"] == "success" and "3 lines.txt" in allowed["text"]
    assert denied["status"] == "error" and denied["error"]["code"] == "PERMISSION_DENIED"


def test_nested_agents_do_not_deadlock_with_concurrency_one(tmp_path: Path) -> None:
    helper = "version: 1\nkind: agent\nname: helper\ndescription: naps\nprompt: You nap.\ntools: [nap]\n"
    naps = [{"name": "nap", "arguments": {"seconds": 0}}] * 2
    script = {
        "boss": [{"tool_calls": [{"name": "helper", "arguments": {"task": "nap twice"}}]}, {"text": "ok"}],
        "helper": [{"tool_calls": naps}, {"text": "napped"}],
    }
    wf = WORKFLOW + "limits: {max_concurrency: 1}\n"
    project(tmp_path, {"tools": ["helper"]}, script, {"agents.d/helper.yaml": helper, "wf.yaml": wf})
    proc = run_cli(["wf.yaml", "--question", "q", "--run-id", "r"], cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(results(tmp_path / "runs" / "r", "nap")) == 2


def loop_until(condition: str) -> str:
    """The workflow as a loop of two iterations of boss, until `condition`."""
    return WORKFLOW.replace("entry: boss\n", "") + textwrap.dedent(
        """\
        steps:
          - loop:
              max_iterations: 2
              until: "CONDITION"
              steps:
                - agent: boss
                  task: "iteration {{ iteration }}"
        """
    ).replace("CONDITION", condition)


def test_until_on_a_missing_file_is_not_met(tmp_path: Path) -> None:
    wf = loop_until("workspace.json('eval/result.json').success_rate >= 0.9")
    project(tmp_path, {}, {"boss": [{"text": "tried"}]}, {"wf.yaml": wf})
    code, out, run_dir = run(tmp_path)
    assert code == 0, out
    evs = events(run_dir)
    assert [e["until_met"] for e in evs if e["type"] == "iteration_end"] == [False, False]
    assert any(e["type"] == "until_error" for e in evs)


def test_until_on_a_file_nested_too_deep_is_not_met(tmp_path: Path) -> None:
    """An agent's JSON nested 5,000 levels deep had broken the stack reading it (an internal
    error); `workspace.json` gives the default for it, as for any file that is not JSON."""
    wf = loop_until("workspace.json('eval/result.json').success_rate | default(0) >= 0.9")
    deep = {"path": "eval/result.json", "content": "[" * 5000 + "]" * 5000, "mode": "overwrite"}
    turn = [{"tool_calls": [{"name": "write_file", "arguments": deep}]}, {"text": "tried"}]
    project(tmp_path, {"tools": ["write_file"]}, {"boss": turn * 2}, {"wf.yaml": wf})
    code, out, run_dir = run(tmp_path)
    assert code == 0, out
    evs = events(run_dir)
    assert [e["until_met"] for e in evs if e["type"] == "iteration_end"] == [False, False]


@pytest.mark.parametrize("planted", ["fifo", "over 10 MB"])
def test_until_reading_a_fifo_or_an_oversized_file_gets_the_default(tmp_path: Path, planted: str) -> None:
    """A condition reads a file the agents' shell made a FIFO (nobody writes it: a read had
    waited forever) or a sparse file over the 10 MB a template reads (a sparse 100 GB one had
    been read whole): it gets the default, so this loop stops after its first iteration."""
    make = "mkfifo flag.txt" if planted == "fifo" else "truncate -s 11M flag.txt"
    wf = loop_until("workspace.read('flag.txt', 'unread') == 'unread'")
    plant = {"tool_calls": [{"name": "execute_shell", "arguments": {"command": make}}]}
    project(tmp_path, {"tools": ["execute_shell"]}, {"boss": [plant, {"text": "tried"}]}, {"wf.yaml": wf})
    proc = run_cli(["wf.yaml", "--question", "q", "--run-id", "r"], cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    evs = events(tmp_path / "runs" / "r")
    assert [e["until_met"] for e in evs if e["type"] == "iteration_end"] == [True]


def test_model_override_by_workflow_model_name_and_optional_inputs(tmp_path: Path) -> None:
    wf = WORKFLOW.replace(
        "  question: {description: q}\n", "  question: {description: q}\n  tone: {required: false}\n"
    ).replace(
        "entry: boss\n", 'entry: boss\ntask: "{{ question }}{% if tone %} in a {{ tone }} tone{% endif %}"\n'
    )
    project(tmp_path, {}, {"boss": [{"text": "ok"}]}, {"wf.yaml": wf})
    code, out, run_dir = run(tmp_path, "--model", "s")
    assert code == 0, out
    start = next(e for e in events(run_dir) if e["type"] == "agent_start")
    assert start["model"] == "s" and start["task"] == "q"


def test_agent_deny_patterns_add_to_the_tools_own(tmp_path: Path) -> None:
    script = {
        "boss": [
            {"tool_calls": [{"name": "execute_shell", "arguments": {"command": "git status"}}]},
            {"tool_calls": [{"name": "execute_shell", "arguments": {"command": "sudo ls"}}]},
            {"tool_calls": [{"name": "execute_shell", "arguments": {"command": "echo fine"}}]},
            {"text": "ok"},
        ]
    }
    project(tmp_path, {"tools": [{"execute_shell": {"deny": ["git *"]}}]}, script)
    code, out, run_dir = run(tmp_path)
    assert code == 0, out
    own, builtin, allowed = results(run_dir, "execute_shell")
    assert own["error"]["code"] == "PERMISSION_DENIED"
    assert builtin["error"]["code"] == "PERMISSION_DENIED"  # the built-in `sudo *` still applies
    assert allowed["status"] == "success" and "fine" in allowed["text"]


HOSTILE_CALLS = [
    {"name": "read_file", "arguments": "[1, 2]"},
    {"name": "read_file", "arguments": "null"},
    {"name": "read_file", "arguments": {"path": {"$ref": "#/x"}}},
    {"name": "read_file", "arguments": {"path": "a\u0000b"}},
    {"name": "read_file", "arguments": {"path": "x" * 100_000}},
    {"name": "read_file", "arguments": {"path": "../../etc/passwd"}},
    {"name": "read_file", "arguments": {"path": "/etc/passwd"}},
    {"name": "", "arguments": {}},
    {"name": "../../bin/sh", "arguments": {}},
    {"name": "helper", "arguments": {"task": ["not", "a", "string"]}},
    {"name": "helper", "arguments": {"task": "x", "unexpected": True}},
]


def test_hostile_tool_calls_become_error_results(tmp_path: Path) -> None:
    helper = "version: 1\nkind: agent\nname: helper\ndescription: helps\nprompt: You help.\n"
    script = {"boss": [{"tool_calls": HOSTILE_CALLS}, {"text": "survived"}]}
    project(tmp_path, {"tools": ["read_file", "helper"]}, script, {"agents.d/helper.yaml": helper})
    code, out, run_dir = run(tmp_path)
    assert code == 0, out
    evs = events(run_dir)
    outcomes = [e["result"] for e in evs if e["type"] == "tool_result"]
    assert len(outcomes) == len(HOSTILE_CALLS)
    assert all(r["status"] == "error" for r in outcomes), [r["text"][:80] for r in outcomes]
    codes = {r["error"]["code"] for r in outcomes}
    assert codes <= {"INVALID_PARAM", "ACCESS_DENIED", "UNKNOWN_TOOL", "NOT_FOUND"}
    assert not any(e["type"] == "agent_start" and e["agent"] == "helper" for e in evs)
    assert next(e for e in evs if e["type"] == "agent_end")["status"] == "completed"
