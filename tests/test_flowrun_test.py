"""`flowrun record`, `flowrun test` and `flowrun replay --diff` through the CLI: a cassette
recorded from a live run over both wire formats passes; an edited prompt fails with the first
differing step (and `replay --diff` shows the changed lines); a re-recorded cassette whose tool
call changed fails on that expectation; text, github and junit reports; each kind of
expectation; older logs without prompt digests still replay; the recorded date is kept."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
import yaml
from support.cli import run_cli
from support.env import WIRES, model_env
from support.paths import REPO
from support.project import model, workflow, write_files, write_project
from support.wire_server import Reply, ToolCallSpec, WireRequest, WireServer

NOTES = re.compile(r"NOTES_FILE=(\S+)")


def project(tmp: Path, provider: str, notes: str = "notes.md", tools: list[str] | None = None) -> None:
    priced = model(provider, model="m-test", price={"input": 1.0, "output": 1.0})
    inputs = {"topic": {"description": "t"}}
    task = "Take notes on {{ topic }}."
    spec = workflow(priced, name="notes", inputs=inputs, entry="boss", output="answer.md", task=task)
    boss = {
        "prompt": f"You are the boss. Today is {{{{ date }}}}. NOTES_FILE={notes}",
        "tools": tools or ["write_file", "read_file"],
    }
    write_project(tmp / "proj", spec, {"boss": boss}, name="notes.yaml")


def responder(request: WireRequest) -> Reply:
    """Writes the notes file its system prompt names, then the answer, then says so."""
    notes = NOTES.search(request.system)
    path = notes.group(1) if notes else "unknown.md"
    replies = [
        Reply(tool_calls=[ToolCallSpec("write_file", {"path": path, "content": "notes\n"})]),
        Reply(
            tool_calls=[
                ToolCallSpec("write_file", {"path": "answer.md", "content": "# Answer\n\nIt is 42.\n"})
            ]
        ),
        Reply(text="Done: answer.md"),
    ]
    turn = request.assistant_turns
    return replies[turn] if turn < len(replies) else Reply(text="done")


TEST_FILE = """\
version: 1
kind: test
name: notes
workflow: ../proj/notes.yaml
cassette: cassettes/notes
inputs: {topic: the answer}
expect:
  status: completed
  output:
    contains: "It is 42"
    matches: '^# Answer$'
  tool_calls:
    - {tool: write_file, agent: boss, arguments: {path: notes.md}}
    - {tool: write_file, arguments: {path: answer.md}}
  ordered: true
  not_called: [read_file]
  files:
    - notes.md
    - {path: answer.md, contains: "42"}
  budget: {max_steps: 3, max_tokens: 100, max_cost_usd: 0.01}
"""


@pytest.mark.parametrize("provider", WIRES)
def test_record_test_and_a_prompt_edit(tmp_path: Path, provider: str) -> None:
    project(tmp_path, provider)
    with WireServer(responder) as server:
        env = model_env(server, provider)
        # a new test file: the run is recorded and the test file drafted from it
        proc = run_cli(
            ["record", "tests/notes.flowrun.yaml", "proj/notes.yaml", "--topic", "the answer", "-q"],
            cwd=tmp_path,
            env=env,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "cassette: tests/cassettes/notes" in proc.stdout
        drafted = yaml.safe_load((tmp_path / "tests" / "notes.flowrun.yaml").read_text())
        assert drafted["expect"]["tool_calls"] == [{"tool": "write_file", "agent": "boss"}]
        assert drafted["inputs"] == {"topic": "the answer"} and drafted["expect"]["files"] == ["answer.md"]
        assert sorted(p.name for p in (tmp_path / "tests" / "cassettes" / "notes").iterdir()) == [
            "answer.md",
            "events.jsonl",
            "run.json",
            "usage.json",
        ]
        recorded = len(server.requests)
        schema = check_jsonschema(
            REPO / "schema" / "test.schema.json", tmp_path / "tests" / "notes.flowrun.yaml"
        )
        assert schema.returncode == 0, schema.stdout + schema.stderr

        # the test, with real expectations, passes offline: no request reaches the server
        (tmp_path / "tests" / "notes.flowrun.yaml").write_text(TEST_FILE)
        proc = run_cli(["test", "-v"], cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert len(server.requests) == recorded
        assert "PASS notes (tests/notes.flowrun.yaml)" in proc.stdout
        assert (
            "✓ cassette (tests/notes.flowrun.yaml:5): every model call came from the cassette (3 recorded)"
            in proc.stdout
        )
        assert "1 test(s): 1 passed, 0 failed (12 of 12 expectations held)" in proc.stdout

        # a prompt edit that changes the tool call: the replay stops at the first differing step
        project(tmp_path, provider, notes="summary.md")
        proc = run_cli(["test"], cwd=tmp_path)
        assert proc.returncode == 1
        assert "FAIL notes" in proc.stdout
        step = (
            "first differing step: agent 'boss' (boss) model call 1: "
            "its system prompt differs from the recording"
        )
        assert (
            step in proc.stdout
            and "-You are the boss." in proc.stdout
            and "NOTES_FILE=summary.md" in proc.stdout
        )
        diff = run_cli(["replay", "tests/cassettes/notes", "--diff"], cwd=tmp_path)
        assert diff.returncode == 1 and diff.stdout.startswith(step)
        assert "+You are the boss. Today is" in diff.stdout and "NOTES_FILE=summary.md" in diff.stdout

        # recorded again with the edit: now the tool call itself differs from what the test expects
        proc = run_cli(["record", "tests/notes.flowrun.yaml", "-q"], cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "(kept: its expectations unchanged)" in proc.stdout
    proc = run_cli(["test", "tests/notes.flowrun.yaml"], cwd=tmp_path)
    assert proc.returncode == 1
    out = proc.stdout
    assert "✓ cassette" not in out  # passing checks only with -v
    assert (
        "✗ tool_calls[0] (tests/notes.flowrun.yaml:13): write_file is called by boss with "
        "{'path': 'notes.md'}; calls of write_file: [{'path': 'summary.md'" in out
    )
    assert "✗ files[0] (tests/notes.flowrun.yaml:18): notes.md exists; it was not written" in out
    assert "(10 of 12 expectations held)" in out

    github = run_cli(["test", "--format", "github"], cwd=tmp_path)
    assert github.returncode == 1
    assert (
        "::error file=tests/notes.flowrun.yaml,line=13,title=flowrun test notes::tool_calls[0]: write_file"
        in github.stdout
    )
    junit = run_cli(["test", "--format", "junit", "--output", "report.xml"], cwd=tmp_path)
    assert junit.returncode == 1
    suite = ElementTree.parse(tmp_path / "report.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "2" and suite.get("tests") == "12"
    failed = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failed == ["tool_calls[0]", "files[0]"]


def check_jsonschema(schema: Path, file: Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "check-jsonschema"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "check_jsonschema"]
    return subprocess.run([*command, "--schemafile", str(schema), str(file)], capture_output=True, text=True)


SCRIPTED = """\
version: 1
kind: workflow
name: s
inputs:
  topic: {description: t}
models:
  s: {provider: scripted, model: s, script: script.yaml}
default_model: s
entry: boss
"""


def scripted(tmp: Path, tools: list[str] | None = None, task: str | None = None) -> None:
    boss = {
        "version": 1,
        "kind": "agent",
        "name": "boss",
        "prompt": "You are the boss.",
        "tools": tools or ["write_file"],
    }
    script = {
        "version": 1,
        "kind": "script",
        "agents": {
            "boss": [
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.md", "content": "alpha"}}]},
                {"text": "all done"},
            ]
        },
    }
    wf = yaml.safe_load(SCRIPTED)
    if task:
        wf["task"] = task
    write_files(
        tmp,
        {
            "s.yaml": yaml.safe_dump(wf),
            "agents.d/boss.yaml": yaml.safe_dump(boss),
            "script.yaml": yaml.safe_dump(script),
        },
    )


def test_replay_diff_names_tools_and_task_changes(tmp_path: Path) -> None:
    scripted(tmp_path)
    proc = run_cli(["s.yaml", "--topic", "x", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    same = run_cli(["replay", "runs/r", "--diff"], cwd=tmp_path)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "no step diverges" in same.stdout
    assert not list(tmp_path.glob("runs/r-replay*"))  # --diff replays into a temporary folder

    scripted(tmp_path, tools=["write_file", "list_directory"])
    tools = run_cli(["replay", "runs/r", "--diff"], cwd=tmp_path)
    assert tools.returncode == 1
    assert "model call 1: its tools differ from the recording (added: list_directory)" in tools.stdout
    assert "  tool added: list_directory" in tools.stdout

    scripted(tmp_path, task="Write about {{ topic }} in a.md.")
    task = run_cli(["replay", "runs/r", "--diff", "--into", "again"], cwd=tmp_path)
    assert task.returncode == 1
    assert "model call 1: the conversation before it differs from the recording" in task.stdout
    assert "+Write about x in a.md." in task.stdout and (tmp_path / "again" / "events.jsonl").exists()
    # a plain replay says where, too
    plain = run_cli(["replay", "runs/r", "-q"], cwd=tmp_path)
    assert plain.returncode == 1 and "first differing step: agent 'boss' (boss) model call 1" in plain.stderr


def test_older_logs_without_digests_still_replay_and_the_date_is_kept(tmp_path: Path) -> None:
    scripted(tmp_path, task="Today is {{ date }}.")
    proc = run_cli(["s.yaml", "--topic", "x", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    log = tmp_path / "runs" / "r" / "events.jsonl"
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert all(
        e.get("system_digest") and e.get("tools_digest") for e in events if e["type"] == "model_request"
    )

    # as an older version wrote it: no prompt digests, no recorded date
    old = [{k: v for k, v in e.items() if k not in ("system_digest", "tools_digest", "date")} for e in events]
    log.write_text("".join(json.dumps(e) + "\n" for e in old))
    again = run_cli(["replay", "runs/r", "--diff"], cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr

    # a run recorded on another day replays with that day's date (so its prompts match)
    moved = [{**e, "date": "2001-02-03"} if e["type"] == "run_start" else e for e in events]
    log.write_text("".join(json.dumps(e) + "\n" for e in moved))
    proc = run_cli(["replay", "runs/r", "--into", "dated", "-q"], cwd=tmp_path)
    starts = [json.loads(line) for line in (tmp_path / "dated" / "events.jsonl").read_text().splitlines()]
    agent = next(e for e in starts if e["type"] == "agent_start")
    assert agent["task"] == "Today is 2001-02-03."
    assert "conversation before it differs" in proc.stderr  # recorded with today's date in the task


def test_each_expectation_fails_with_its_reason(tmp_path: Path) -> None:
    scripted(tmp_path)
    proc = run_cli(["record", "t.flowrun.yaml", "s.yaml", "--topic", "x", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    spec = yaml.safe_load((tmp_path / "t.flowrun.yaml").read_text())
    spec["expect"] = {
        "status": "max_steps",
        "output": {"contains": ["all done", "nope"], "not_contains": "all", "matches": "^none$"},
        "message": {"not_contains": "done", "matches": "("},
        "tool_calls": [
            {"tool": "write_file", "arguments": {"path": "a.md", "content": "beta"}},
            {"tool": "grep"},
        ],
        "not_called": ["write_file"],
        "files": [{"path": "a.md", "contains": "gamma"}, "b.md"],
        "budget": {"max_steps": 1, "max_tokens": 1, "max_cost_usd": 1},
    }
    (tmp_path / "t.flowrun.yaml").write_text(yaml.safe_dump(spec))
    proc = run_cli(["test", "t.flowrun.yaml"], cwd=tmp_path)
    assert proc.returncode == 1
    out = proc.stdout
    for text in (
        "✗ status (t.flowrun.yaml:",
        "status max_steps; the run ended completed",
        "✗ output contains",
        "the final answer contains 'nope'; it is: 'all done'",
        "✗ output not_contains",
        "✗ output matches",
        "✗ tool_calls[0]",
        "calls of write_file: [{'content': 'alpha', 'path': 'a.md'}]",
        "✗ tool_calls[1]",
        "grep was never called",
        "✗ not_called[0]",
        "write_file is never called; it was called 1 time(s)",
        "a.md exists and contains 'gamma'; it is: 'alpha'",
        "b.md exists; it was not written",
        "at most 1 model calls; the run made 2",
        "✗ budget max_tokens",
        "the run's models have no price, so its cost is unknown",
        "✗ message not_contains",
        "the run's final message does not contain 'done'",
        "✗ message matches",
        "invalid regex /(/: missing ), unterminated subpattern at position 0",
    ):
        assert text in out, text
    assert "1 test(s): 0 passed, 1 failed (2 of 16 expectations held)" in out


def test_bad_test_files_and_no_test_files(tmp_path: Path) -> None:
    empty = run_cli(["test"], cwd=tmp_path)
    assert empty.returncode == 2 and "no test files (*.flowrun.yaml)" in empty.stderr
    write_files(
        tmp_path,
        {
            "tests/typo.flowrun.yaml": (
                "version: 1\nkind: test\nname: typo\nworkflow: x.yaml\ncassette: c\nexpekt: {}\n"
            ),
            "tests/missing.flowrun.yaml": (
                "version: 1\nkind: test\nname: missing\nworkflow: nowhere.yaml\ncassette: nothing\n"
                "expect: {output: {matches: '('}}\n"
            ),
        },
    )
    proc = run_cli(["test"], cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    assert (
        "FAIL typo" in proc.stdout
        and "unknown key 'expekt'" in proc.stdout
        and "did you mean 'expect'" in proc.stdout
    )
    assert "cassette 'nothing' not found" in proc.stdout
    found = run_cli(["validate", "tests", "--format", "json"], cwd=tmp_path)
    codes = {(Path(d["file"]).name, d["path"], d["code"]) for d in json.loads(found.stdout)["diagnostics"]}
    assert ("missing.flowrun.yaml", "workflow", "missing-file") in codes
    assert ("missing.flowrun.yaml", "cassette", "missing-file") in codes
    assert ("missing.flowrun.yaml", "expect.output.matches", "bad-regex") in codes


def test_the_python_api_runs_a_test_file(tmp_path: Path) -> None:
    import asyncio

    from flowrun.testing import record_cassette, run_test_file

    scripted(tmp_path)
    test_file = tmp_path / "suite" / "t.flowrun.yaml"
    recording = asyncio.run(record_cassette(test_file, tmp_path / "s.yaml", {"topic": "x"}))
    assert recording.drafted and recording.result.ok
    assert recording.cassette == tmp_path / "suite" / "cassettes" / "t"
    assert (recording.cassette / "events.jsonl").is_file() and recording.result.run_dir == recording.cassette
    drafted = yaml.safe_load(test_file.read_text())
    assert drafted["workflow"] == "../s.yaml" and drafted["inputs"] == {"topic": "x"}
    # recorded again: the inputs come from the test file, the expectations stay
    again = asyncio.run(record_cassette(test_file))
    assert not again.drafted and yaml.safe_load(test_file.read_text()) == drafted
    report = asyncio.run(run_test_file(test_file, keep=tmp_path / "kept"))
    assert report.ok, [(c.name, c.detail) for c in report.checks]
    assert (tmp_path / "kept" / "t" / "a.md").read_text() == "alpha"
    details: list[Any] = [c.detail for c in report.checks]
    assert details[0] == "every model call came from the cassette (2 recorded)"


@pytest.mark.parametrize("provider", WIRES)
def test_a_recorded_model_failure_replays_as_that_failure(tmp_path: Path, provider: str) -> None:
    """A cassette of a run that failed (a model call refused for good) replays to the same
    failure, so a test can expect `status: failed`; an edited prompt before it still diverges."""
    project(tmp_path, provider)

    def refuse_second(request: WireRequest) -> Reply:
        if request.assistant_turns == 0:
            return Reply(tool_calls=[ToolCallSpec("write_file", {"path": "notes.md", "content": "n\n"})])
        body = {"error": {"type": "invalid_request_error", "message": "prompt is too long"}}
        return Reply(status=400, error_body=body)

    with WireServer(refuse_second) as server:
        proc = run_cli(
            ["record", "tests/down.flowrun.yaml", "proj/notes.yaml", "--topic", "t", "-q"],
            cwd=tmp_path,
            env=model_env(server, provider),
        )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    drafted = yaml.safe_load((tmp_path / "tests" / "down.flowrun.yaml").read_text())
    assert drafted["expect"]["status"] == "failed"
    drafted["expect"] |= {
        "message": {"contains": ["HTTP 400", "prompt is too long"], "matches": "^agent 'boss'"},
        "files": ["notes.md"],
    }
    (tmp_path / "tests" / "down.flowrun.yaml").write_text(yaml.safe_dump(drafted))

    proc = run_cli(["test", "-v"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "✓ status (tests/down.flowrun.yaml" in proc.stdout
    assert "✓ message contains (tests/down.flowrun.yaml" in proc.stdout
    same = run_cli(["replay", "tests/cassettes/down", "--diff"], cwd=tmp_path)
    assert same.stdout.startswith("no step diverges"), same.stdout + same.stderr

    project(tmp_path, provider, notes="other.md")
    proc = run_cli(["test"], cwd=tmp_path)
    assert proc.returncode == 1
    assert "first differing step: agent 'boss' (boss) model call 1: its system prompt differs" in proc.stdout
