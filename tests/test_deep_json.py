"""Input nested thousands of levels deep, wherever a user, a client or a model hands it to flowrun.

JSON (or a number of thousands of digits): a batch's items, a request to the runs API, an
agent's output graded as JSON, an eval's dataset and baseline, a line of a run's event log.
Python's parser raises RecursionError (or a ValueError that is no JSONDecodeError) there, which
had ended each command in an internal error and the server's answer in a 500 with a traceback in
its log. Now each is a mistake in the input, said in one line: "nested more than 64 levels deep"
(as a model's tool arguments already were). The same for a manifest's Jinja template, regular
expression (a stop pattern, a guardrail, a hook's matcher) and a `--set` value: `validate` and
the run say which, where, in one line, where they had printed a traceback."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
import yaml
from support.cli import run_cli
from support.project import scripted_project
from support.runs import no_traceback
from support.served import Served

import flowrun

DEEP = "[" * 5000 + "]" * 5000  # far past Python's recursion limit
LONG_NUMBER = "1" + "0" * 5000  # past the digits Python converts to an int


def project(tmp: Path, answer: str = "done") -> Path:
    agents = {"w": {"prompt": "You write.", "tools": ["write_file"]}}
    call = {"name": "write_file", "arguments": {"path": "answer.json", "content": answer}}
    replies = {"w": [{"tool_calls": [call]}, {"text": "done"}] * 4}
    inputs = {"topic": {"description": "t"}}
    return scripted_project(tmp, agents, replies, entry="w", inputs=inputs)


def test_batch_items_nested_too_deep_or_with_too_long_a_number_are_refused_at_their_line(
    tmp_path: Path,
) -> None:
    wf = project(tmp_path)
    files = {
        "deep.jsonl": '{"topic": "fine"}\n{"topic": ' + DEEP + "}\n",
        "deep.json": DEEP,
        "number.jsonl": '{"topic": ' + LONG_NUMBER + "}\n",
    }
    said = {
        "deep.jsonl": "deep.jsonl:2: not JSON: nested more than 64 levels deep",
        "deep.json": "deep.json:1: not JSON: nested more than 64 levels deep",
        "number.jsonl": "number.jsonl:1: not JSON: a number has more than 4300 digits",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        proc = run_cli(["batch", str(wf), name, "--out", f"out-{name}"], cwd=tmp_path)
        out = no_traceback(proc)
        assert proc.returncode == 2 and said[name] in out and "nothing was run" in out, out
        assert not (tmp_path / f"out-{name}").exists()


def test_the_runs_api_answers_a_body_nested_too_deep_with_a_400(tmp_path: Path) -> None:
    wf = project(tmp_path)
    served = Served(tmp_path, [str(wf), "--port", "0", "--dry-run"])
    try:
        with httpx.Client(base_url=served.base, timeout=60) as http:
            for body in ('{"inputs": {"topic": ' + DEEP + "}}", '{"a":' * 5000, '{"n": ' + LONG_NUMBER + "}"):
                answer = http.post("/v1/runs", content=body, headers={"Content-Type": "application/json"})
                assert answer.status_code == 400, answer.text
                assert answer.json()["error"].startswith("the body is not JSON: "), answer.text
            assert "nested more than 64 levels deep" in http.post("/v1/runs", content=DEEP).json()["error"]
            started = http.post("/v1/runs", json={"inputs": {"topic": "t"}})  # the server goes on
            assert started.status_code == 201, started.text
    finally:
        served.stop()
    assert not any("Traceback" in line for line in served.lines), "".join(served.lines)


def test_an_output_graded_as_json_nested_too_deep_scores_zero_with_the_reason(tmp_path: Path) -> None:
    wf = project(tmp_path, answer=DEEP)
    evalset = {
        "version": 1,
        "kind": "evalset",
        "name": "deep",
        "workflow": wf.name,
        "cases": [{"id": "one", "inputs": {"topic": "t"}}],
        "graders": [{"name": "shape", "json_schema": {"schema": {"type": "array"}, "file": "answer.json"}}],
    }
    (tmp_path / "deep.eval.yaml").write_text(yaml.safe_dump(evalset))
    proc = run_cli(["eval", "deep.eval.yaml", "--json", "report.json"], cwd=tmp_path)
    out = no_traceback(proc)
    [run] = json.loads((tmp_path / "report.json").read_text())["variants"][0]["runs"]
    [shape] = run["graders"]
    assert shape["score"] == 0 and "nested more than 64 levels deep" in shape["detail"], (shape, out)
    (tmp_path / "before.json").write_text('{"variants": ' + DEEP + "}")
    compared = run_cli(["eval", "deep.eval.yaml", "--baseline", "before.json"], cwd=tmp_path)
    said = no_traceback(compared)
    assert compared.returncode == 2 and "before.json is not a `flowrun eval --json` report" in said, said
    assert "nested more than 64 levels deep" in said
    first = '{"id": "a", "inputs": {"topic": "t"}}\n'
    (tmp_path / "cases.jsonl").write_text(first + '{"id": "b", "inputs": ' + DEEP)
    evalset["dataset"] = "cases.jsonl"
    del evalset["cases"]
    (tmp_path / "deep.eval.yaml").write_text(yaml.safe_dump(evalset))
    checked = run_cli(["validate", "deep.eval.yaml"], cwd=tmp_path)
    said = no_traceback(checked)
    assert checked.returncode == 1 and "cases.jsonl:2" in said, said
    assert "nested more than 64 levels deep" in said


def test_a_line_of_an_event_log_nested_too_deep_is_a_damaged_line_not_a_crash(tmp_path: Path) -> None:
    wf = project(tmp_path)
    proc = run_cli([str(wf), "--topic", "t", "-q", "--run-id", "r"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    log = tmp_path / "runs" / "r" / "events.jsonl"
    with log.open("a") as f:
        f.write('{"seq": 99, "type": "tool_result", "x": ' + DEEP + "}\n")
    for args in (["runs"], ["show", "runs/r"], ["show", "runs/r", "--messages"]):
        shown = run_cli(args, cwd=tmp_path)
        assert shown.returncode == 0, no_traceback(shown)
        no_traceback(shown)
    resumed = run_cli(["resume", "runs/r"], cwd=tmp_path)
    out = no_traceback(resumed)
    assert resumed.returncode == 1 and "events.jsonl:" in out and "the event log is damaged" in out, out


DEEP_PATTERN = "(" * 5000 + "a" + ")" * 5000


@pytest.mark.parametrize(
    ("agent", "said"),
    [
        (
            {"prompt": "{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}"},
            "the template nests expressions or blocks too",
        ),
        (
            {"prompt": "{% if x %}" * 2000 + "y" + "{% endif %}" * 2000},
            "nests expressions or blocks too deep",
        ),
        ({"prompt": "{{ x" + "[0]" * 20000 + " }}"}, "nests expressions or blocks too deep"),
        ({"stop": {"pattern": DEEP_PATTERN}}, "invalid regex: the pattern nests groups too deep"),
        ({"guardrails": {"output": [{"name": "g", "forbid": DEEP_PATTERN}]}}, "the pattern nests groups too"),
        (
            {
                "hooks": {
                    "PreToolUse": [
                        {"matcher": DEEP_PATTERN, "hooks": [{"type": "command", "command": "true"}]}
                    ]
                }
            },
            "is not a regular expression: the pattern nests groups too deep",
        ),
    ],
    ids=["expression", "blocks", "subscripts", "stop", "guardrail", "hook"],
)
def test_a_template_or_a_pattern_nested_too_deep_is_a_manifest_error_at_its_line(
    tmp_path: Path, agent: dict[str, object], said: str
) -> None:
    agents = {"w": {"prompt": "You write.", "tools": ["write_file"], **agent}}
    wf = scripted_project(tmp_path, agents, {"w": [{"text": "done"}]}, entry="w")
    checked = run_cli(["validate", str(wf)], cwd=tmp_path)
    out = no_traceback(checked)
    assert checked.returncode == 1 and "agents.d/w.yaml:" in out and said in out, out
    ran = run_cli([str(wf), "-q"], cwd=tmp_path)
    assert ran.returncode in (1, 2) and said in no_traceback(ran) and not (tmp_path / "runs").exists()


def test_a_set_value_nested_too_deep_is_refused_in_one_line(tmp_path: Path) -> None:
    wf = project(tmp_path)
    for depth in (60, 3000):
        value = "[" * depth + "]" * depth
        proc = run_cli([str(wf), "--topic", "t", "-q", "--set", f"w.max_steps={value}"], cwd=tmp_path)
        out = no_traceback(proc)
        assert proc.returncode == 2 and "--set w.max_steps=[[[" in out, out
        assert "nesting deeper than 50 levels" in out or "the value is not valid YAML" in out, out


def test_the_python_api_refuses_an_input_nested_too_deep_or_holding_itself(tmp_path: Path) -> None:
    """A Python caller's input of lists in lists thousands deep (or a list that holds itself)
    had raised RecursionError out of `Workflow.run`; it is a UsageError naming the input."""
    agents = {"w": {"prompt": "You write {{ data }}.", "tools": []}}
    inputs = {"data": {"type": "list", "description": "d"}}
    wf = scripted_project(tmp_path, agents, {"w": [{"text": "done"}] * 3}, entry="w", inputs=inputs)
    workflow = flowrun.load(wf)
    deep: list[object] = []
    inner = deep
    for _ in range(5000):
        inner.append([])
        inner = inner[0]  # type: ignore[assignment]
    itself: list[object] = []
    itself.append(itself)
    for value in (deep, itself):
        with pytest.raises(flowrun.UsageError, match="input 'data' nests lists and mappings more than 64"):
            asyncio.run(workflow.run({"data": value}, runs_dir=tmp_path / "runs"))
    done = asyncio.run(workflow.run({"data": [[1, [2]], {"a": [3]}]}, runs_dir=tmp_path / "runs"))
    assert done.status == "completed"


def test_a_skills_index_nested_too_deep_is_read_as_a_broken_one(tmp_path: Path) -> None:
    """`validate` of a skills folder whose skills.json nests past the parser had printed a
    traceback; it reads it as it reads any skills.json that is not JSON."""
    skill = tmp_path / "skills" / "a"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: a\ndescription: A skill.\n---\nDo it.\n")
    index = tmp_path / "skills" / "skills.json"
    said = {}
    for name, text in (("broken", '{"skills": ['), ("deep", '{"skills": ' + DEEP + "}")):
        index.write_text(text)
        proc = run_cli(["validate", "skills"], cwd=tmp_path)
        said[name] = (proc.returncode, no_traceback(proc).replace("\n", " "))
    assert said["deep"] == said["broken"], said
