"""Eval sets as `flowrun validate` and `flowrun eval` check them: each mistake is one line with
file:line and a hint, a non-zero exit and no traceback (an unknown workflow, inputs the workflow
does not take or misses, a repeated case id, a bad regex, an unknown judge model, a trajectory
tool or agent the workflow does not have); cases read from JSONL and CSV datasets run, and a
malformed row is named by its file and line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.cli import run_cli
from support.project import write_files

WORKFLOW = """\
version: 1
kind: workflow
name: qa
inputs:
  question: {description: the question}
  style: {description: how to answer, default: short}
models:
  m: {provider: openai, model: gpt-4o}
  judge: {provider: openai, model: gpt-4o-mini}
default_model: m
entry: answerer
task: "Question: {{ question }} ({{ style }})"
"""
AGENT = """\
version: 1
kind: agent
name: answerer
prompt: You answer questions.
tools: [write_file, read_file]
"""
EVALSET = """\
version: 1
kind: evalset
name: qa
workflow: qa.yaml
cases:
  - id: capital
    inputs: {question: What is the capital of France?}
  - id: sum
    inputs: {question: What is 2 + 2?, style: long}
graders:
  - status: completed
  - output: {matches: '\\w+'}
  - trajectory: {called: [write_file], never: [read_file], max_calls: {"*": 4}}
  - judge: {model: judge, rubric: "Is {{ output }} right for {{ inputs.question }}?"}
"""
LINE = re.compile(r"^(?P<file>[\w./-]+):(?P<line>\d+):\d+: error\[(?P<code>[\w-]+)\]: (?P<message>.*)$")


def project(folder: Path, evalset: str = EVALSET) -> Path:
    files = {"agents.d/answerer.yaml": AGENT, "qa.yaml": WORKFLOW, "qa.eval.yaml": evalset}
    return write_files(folder, files) / "qa.eval.yaml"


def errors(folder: Path, *args: str) -> list[tuple[str, int, str, str, str]]:
    """(file, line, code, message, hint) of each error `flowrun validate` prints."""
    proc = run_cli(["validate", "qa.eval.yaml", *args], cwd=folder)
    output = proc.stdout + proc.stderr
    assert "Traceback" not in output, output
    lines = proc.stdout.splitlines()
    found = []
    for i, line in enumerate(lines):
        match = LINE.match(line)
        if match:
            hint = lines[i + 1].strip().removeprefix("hint: ") if i + 1 < len(lines) else ""
            found.append((match["file"], int(match["line"]), match["code"], match["message"], hint))
    assert (proc.returncode != 0) == bool(found), output
    return found


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if text in line)


def test_the_eval_set_validates(tmp_path: Path) -> None:
    project(tmp_path)
    assert errors(tmp_path, "--strict") == []


def test_the_trajectory_tool_is_the_workflows_only(tmp_path: Path) -> None:
    """A tool that must be called must be one of the workflow's (a near miss gets a
    did-you-mean); one that must never be called may be a guard against a tool added later, so
    only a near miss of a known tool is a warning."""
    text = EVALSET.replace("called: [write_file], never: [read_file]", "called: [write_fil, exec_x]")
    evalset = project(tmp_path, text)
    found = errors(tmp_path)
    line = line_of(evalset, "trajectory:")
    assert found == [
        (
            "qa.eval.yaml",
            line,
            "unknown-tool",
            "trajectory: no agent of workflow 'qa' has the tool 'write_fil' (at graders[2])",
            "did you mean 'write_file'?",
        ),
        (
            "qa.eval.yaml",
            line,
            "unknown-tool",
            "trajectory: no agent of workflow 'qa' has the tool 'exec_x' (at graders[2])",
            "its agents' tools: read_file, write_file",
        ),
    ]
    project(tmp_path, EVALSET.replace("never: [read_file]", "never: [execute_shell, read_fil]"))
    proc = run_cli(["validate", "qa.eval.yaml"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert f"qa.eval.yaml:{line}:5: warning[unknown-tool]" in proc.stdout
    assert "'read_fil'" in proc.stdout and "did you mean 'read_file'?" in proc.stdout
    assert "execute_shell" not in proc.stdout  # a guard: no near miss of a known tool
    assert run_cli(["validate", "--strict", "qa.eval.yaml"], cwd=tmp_path).returncode == 1


def test_a_trajectory_agent_the_workflow_does_not_run(tmp_path: Path) -> None:
    own = "  - id: own\n    inputs: {question: Q?}\n    graders: [{trajectory: {called: [read_file]}}]\n"
    text = EVALSET.replace("never: [read_file]", "agent: answerr").replace("cases:\n", "cases:\n" + own, 1)
    project(tmp_path, text)
    (found,) = errors(tmp_path)
    assert found[2:] == (
        "unknown-agent",
        "trajectory: workflow 'qa' runs no agent 'answerr' (at graders[2])",
        "did you mean 'answerer'?",
    )


def test_an_unknown_workflow(tmp_path: Path) -> None:
    evalset = project(tmp_path, EVALSET.replace("workflow: qa.yaml", "workflow: qa2.yaml"))
    found = next(f for f in errors(tmp_path) if f[2] == "missing-file")
    assert found[:2] == ("qa.eval.yaml", line_of(evalset, "workflow:"))
    assert "workflow 'qa2.yaml' not found" in found[3] and "relative to the eval set" in found[4]
    # `flowrun eval` refuses it the same way, before anything runs
    proc = run_cli(["eval", "qa.eval.yaml", "--dry-run"], cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    assert f"qa.eval.yaml:{line_of(evalset, 'workflow:')}:" in proc.stdout + proc.stderr


def test_inputs_that_do_not_match_the_workflow(tmp_path: Path) -> None:
    text = EVALSET.replace("{question: What is 2 + 2?, style: long}", "{questoin: What is 2 + 2?}")
    text = text.replace("{question: What is the capital of France?}", "{style: long}")
    evalset = project(tmp_path, text)
    found = errors(tmp_path)
    capital, total = line_of(evalset, "id: capital"), line_of(evalset, "id: sum")
    assert [(f[1], f[2]) for f in found] == [(capital, "bad-input"), (total, "unknown-input")]
    assert "case 'capital'" in found[0][3] and "question" in found[0][3]
    assert found[1][3] == "case 'sum': unknown input 'questoin' of workflow 'qa' (at cases[1])"
    assert found[1][4] == "did you mean 'question'?"


def test_a_repeated_case_id(tmp_path: Path) -> None:
    evalset = project(tmp_path, EVALSET.replace("id: sum", "id: capital"))
    (found,) = errors(tmp_path)
    first = line_of(evalset, "id: capital")
    second = first + 2
    assert found[:3] == ("qa.eval.yaml", second, "duplicate-id")
    assert f"case id 'capital' repeats qa.eval.yaml:{first}" in found[3]
    assert found[4] == "give each case its own id"


def test_a_bad_regex(tmp_path: Path) -> None:
    evalset = project(tmp_path, EVALSET.replace("matches: '\\w+'", "matches: '([a-z]'"))
    (found,) = errors(tmp_path)
    assert found[:3] == ("qa.eval.yaml", line_of(evalset, "output:"), "bad-regex")
    assert found[3].startswith("invalid regex /([a-z]/: missing ), unterminated subpattern")


def test_a_budget_giving_max_calls_under_both_names(tmp_path: Path) -> None:
    both = "  - budget: {max_calls: 4, max_steps: 4, max_seconds: 60}\n"
    evalset = project(tmp_path, EVALSET.replace("  - status: completed\n", "  - status: completed\n" + both))
    (found,) = errors(tmp_path)
    assert found[:3] == ("qa.eval.yaml", line_of(evalset, "budget:"), "budget-twice")
    assert found[3:] == (
        "give max_calls or max_steps, not both (at graders[1])",
        "max_steps is the older name of max_calls",
    )


def test_an_unknown_judge_model(tmp_path: Path) -> None:
    evalset = project(tmp_path, EVALSET.replace("model: judge,", "model: juge,"))
    (found,) = errors(tmp_path)
    assert found[:3] == ("qa.eval.yaml", line_of(evalset, "judge:"), "unknown-model")
    assert "juge" in found[3] and found[4] == "did you mean 'judge'?"


# ---------------------------------------------------------------- datasets


JSONL_SET = EVALSET.replace(
    EVALSET[EVALSET.index("cases:") : EVALSET.index("graders:")], "dataset: cases.jsonl\n"
)
CSV_SET = JSONL_SET.replace("cases.jsonl", "cases.csv")


def dataset_project(folder: Path, name: str, text: str) -> Path:
    project(folder, JSONL_SET if name.endswith(".jsonl") else CSV_SET)
    (folder / name).write_text(text)
    return folder / name


def dry_run(folder: Path) -> dict[str, object]:
    proc = run_cli(["eval", "qa.eval.yaml", "--dry-run", "--json", "r.json", "-q"], cwd=folder)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report: dict[str, object] = json.loads((folder / "r.json").read_text())
    return report


def runs_of(report: dict[str, object]) -> list[dict[str, object]]:
    variants = report["variants"]
    assert isinstance(variants, list)
    runs: list[dict[str, object]] = variants[0]["runs"]
    return runs


def test_a_jsonl_dataset_runs_each_line(tmp_path: Path) -> None:
    rows = [
        {"id": "capital", "inputs": {"question": "What is the capital of France?"}, "expected": "Paris"},
        {"id": "sum", "inputs": {"question": "What is 2 + 2?", "style": "long"}, "expected": 4},
        {
            "id": "own",
            "inputs": {"question": "Hi?"},
            "graders": [{"name": "said", "output": {"contains": ""}}],
        },
    ]
    dataset_project(tmp_path, "cases.jsonl", "".join(json.dumps(r) + "\n" for r in rows) + "\n")
    assert errors(tmp_path, "--strict") == []
    runs = runs_of(dry_run(tmp_path))
    assert [r["case"] for r in runs] == ["capital", "sum", "own"]
    assert all(r["status"] == "completed" for r in runs)
    graders = runs[2]["graders"]
    assert isinstance(graders, list) and [g["name"] for g in graders][-1] == "said"
    # each case's run got its inputs
    record = json.loads((Path(str(runs[1]["run_dir"])) / "run.json").read_text())
    assert record["inputs"] == {"question": "What is 2 + 2?", "style": "long"}


def test_a_malformed_jsonl_row_is_named_by_file_and_line(tmp_path: Path) -> None:
    good = json.dumps({"id": "capital", "inputs": {"question": "Q?"}})
    dataset_project(
        tmp_path, "cases.jsonl", f"{good}\n\n{{'id': 'x'}}\n" + json.dumps({"id": "y", "input": {}}) + "\n"
    )
    found = errors(tmp_path)
    assert [(f[0], f[1], f[2]) for f in found] == [
        ("cases.jsonl", 3, "bad-row"),
        ("cases.jsonl", 4, "bad-row"),
    ]
    assert found[0][3].startswith("not JSON: Expecting property name enclosed in double quotes")
    assert found[0][4] == "one JSON object a line"
    assert found[1][4] == "did you mean 'inputs'?"
    proc = run_cli(["eval", "qa.eval.yaml", "--dry-run"], cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    assert "cases.jsonl:3:" in proc.stdout + proc.stderr


def test_a_csv_dataset_runs_each_row(tmp_path: Path) -> None:
    text = (
        "id,question,style,expected\n"
        'capital,"What is the capital of France, then?",,Paris\n'
        "sum,What is 2 + 2?,long,4\n"
    )
    dataset_project(tmp_path, "cases.csv", text)
    assert errors(tmp_path, "--strict") == []
    runs = runs_of(dry_run(tmp_path))
    assert [r["case"] for r in runs] == ["capital", "sum"]
    assert all(r["status"] == "completed" for r in runs)
    record = json.loads((Path(str(runs[0]["run_dir"])) / "run.json").read_text())
    # an empty cell is no input: the workflow's default
    assert record["inputs"] == {"question": "What is the capital of France, then?", "style": "short"}


def test_a_malformed_csv_row_is_named_by_file_and_line(tmp_path: Path) -> None:
    text = "id,question,expected\ncapital,Q?,Paris\nsum,Q?,4,extra\nrest,Q?,x\n"
    dataset_project(tmp_path, "cases.csv", text)
    (found,) = errors(tmp_path)
    assert found == ("cases.csv", 3, "bad-row", "4 cells for 3 columns", "a header row, then a row a case")
    # a CSV without an id column
    (tmp_path / "cases.csv").write_text("question,expected\nQ?,x\n")
    (found,) = errors(tmp_path)
    assert found[:3] == ("cases.csv", 1, "bad-row") and "`id` column" in found[3]


@pytest.mark.parametrize("name", ["cases.jsonl", "cases.csv"])
def test_an_input_a_dataset_row_misses(tmp_path: Path, name: str) -> None:
    text = (
        json.dumps({"id": "a", "inputs": {"style": "long"}}) + "\n"
        if name.endswith(".jsonl")
        else "id,style\na,long\n"
    )
    dataset_project(tmp_path, name, text)
    (found,) = errors(tmp_path)
    assert found[:3] == (name, 2 if name.endswith(".csv") else 1, "bad-input")
    assert "case 'a'" in found[3] and "question" in found[3]
