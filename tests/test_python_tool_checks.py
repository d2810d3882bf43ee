"""`flowrun validate` imports a project's Python tools (in a child process) and compares each
function's signature with its manifest: a typo in the function name or a renamed parameter is a
diagnostic with file:line, and a run with such a tool stops before it starts (exit 1, never 70)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli
from support.project import write_files

WORKFLOW = """\
version: 1
kind: workflow
name: demo
entry: boss
default_model: "test:x"
"""

BOSS = """\
version: 1
kind: agent
name: boss
prompt: You lead.
tools: [count_words]
"""

TOOL = """\
version: 1
kind: tool
name: count_words
description: Count the words of a file.
parameters:
  type: object
  properties:
    path: {type: string}
    limit: {type: integer}
  required: [path]
implementation:
  python: mytools.words:count_words
"""

MODULE = """\
from flowrun.tools.base import ToolContext
from flowrun.types import ToolResult


async def count_words(ctx: ToolContext, path: str, limit: int = 0) -> ToolResult:
    text = (ctx.workspace / path).read_text()
    return ToolResult.ok(str(len(text.split())))
"""


def project(tmp: Path, tool: str = TOOL, module: str = MODULE) -> Path:
    files = {
        "wf.yaml": WORKFLOW,
        "agents.d/boss.yaml": BOSS,
        "tools.d/count_words.yaml": tool,
        "mytools/__init__.py": "",
        "mytools/words.py": module,
    }
    return write_files(tmp, files)


def diagnostics(tmp: Path) -> list[dict]:
    proc = run_cli(["validate", "--format", "json", "."], cwd=tmp)
    assert "Traceback" not in proc.stderr
    return list(json.loads(proc.stdout)["diagnostics"])


def test_a_correct_python_tool_passes(tmp_path: Path) -> None:
    assert diagnostics(project(tmp_path)) == []


def test_mistyped_function_name(tmp_path: Path) -> None:
    found = diagnostics(project(tmp_path, TOOL.replace(":count_words", ":count_wrods")))
    assert [d["code"] for d in found] == ["missing-function"]
    d = found[0]
    assert d["file"] == "tools.d/count_words.yaml" and d["line"] == 12
    assert "count_wrods" in d["message"] and "did you mean 'count_words'?" in d["hint"]


def test_renamed_parameter(tmp_path: Path) -> None:
    renamed = TOOL.replace("    path: {type: string}", "    file_path: {type: string}").replace(
        "required: [path]", "required: [file_path]"
    )
    found = diagnostics(project(tmp_path, renamed))
    messages = {d["message"]: d for d in found}
    assert all(d["code"] == "bad-signature" for d in found)
    moved = messages["parameter 'file_path' is not an argument of mytools.words:count_words"]
    assert moved["line"] == 8 and "did you mean 'path'?" in moved["hint"]
    assert any("needs the argument 'path'" in m for m in messages)


def test_argument_without_default_must_be_required(tmp_path: Path) -> None:
    found = diagnostics(project(tmp_path, TOOL.replace("required: [path]", "required: []")))
    assert [d["code"] for d in found] == ["bad-signature"]
    assert "lets the model leave it out" in found[0]["message"] and found[0]["line"] == 8


def test_a_manifest_default_counts_as_given(tmp_path: Path) -> None:
    """The runtime fills in a property's manifest `default` when the model leaves it out, so an
    argument the function needs may be optional in the manifest when it has one; the run uses it."""
    tool = TOOL.replace("limit: {type: integer}", "limit: {type: integer, default: 2}")
    module = MODULE.replace("limit: int = 0", "limit: int").replace(
        "str(len(text.split()))", "str(len(text.split()[:limit]))"
    )
    assert diagnostics(project(tmp_path, tool, module)) == []
    with (tmp_path / "wf.yaml").open("a") as f:
        f.write("workspace: {files: {data.txt: one two three}}\n")
    script = "version: 1\nkind: script\nagents:\n  boss:\n"
    script += "    - tool_calls: [{name: count_words, arguments: {path: data.txt}}]\n    - text: done\n"
    (tmp_path / "s.script.yaml").write_text(script)
    proc = run_cli(["wf.yaml", "--model", "scripted:s.script.yaml", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(x) for x in (tmp_path / "runs" / "r" / "events.jsonl").read_text().splitlines()]
    [result] = [e["result"] for e in events if e["type"] == "tool_result"]
    assert result["status"] == "success" and result["text"] == "2", result


@pytest.mark.parametrize(
    "module, code, words",
    [
        (MODULE.replace("async def", "def"), "bad-signature", "not an async function"),
        (MODULE.replace("(ctx: ToolContext, path", "(*, path"), "bad-signature", "no `ctx`"),
        ("raise RuntimeError('boom at import')\n", "import-failed", "RuntimeError: boom at import"),
        ("import sys\nsys.exit(3)\n", "import-failed", "SystemExit"),
        ("import no_such_dependency_xyz\n", "import-failed", "no_such_dependency_xyz"),
        ("print('noise')\ncount_words = 3\n", "missing-function", "is a int"),
    ],
)
def test_broken_modules_are_diagnostics(tmp_path: Path, module: str, code: str, words: str) -> None:
    found = diagnostics(project(tmp_path, module=module))
    assert [d["code"] for d in found] == [code], found
    assert words in found[0]["message"]


def test_missing_module(tmp_path: Path) -> None:
    found = diagnostics(project(tmp_path, TOOL.replace("mytools.words", "mytools.nowhere")))
    assert [d["code"] for d in found] == ["missing-module"]


def test_kwargs_function_accepts_any_parameter(tmp_path: Path) -> None:
    module = MODULE.replace("path: str, limit: int = 0", "**arguments: object").replace(
        "(ctx.workspace / path)", "(ctx.workspace / str(arguments['path']))"
    )
    assert diagnostics(project(tmp_path, module=module)) == []


def test_a_run_with_a_broken_tool_stops_before_it_starts(tmp_path: Path) -> None:
    project(tmp_path, TOOL.replace(":count_words", ":count_wrods"))
    proc = run_cli(["wf.yaml", "--dry-run", "--runs-dir", "runs"], cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "missing-function" in proc.stderr and "flowrun bug" not in proc.stderr
    assert not (tmp_path / "runs").exists()


def test_the_tool_runs_when_it_validates(tmp_path: Path) -> None:
    project(tmp_path)
    (tmp_path / "data.txt").write_text("one two three\n")
    proc = run_cli(["wf.yaml", "--dry-run", "--runs-dir", "runs", "--run-id", "r"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
