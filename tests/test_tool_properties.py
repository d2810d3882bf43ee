"""Tool properties are declared, not known by name: a user's python tool declares in its manifest
(`files:`, `replay:`) or with `@tool(...)` on its function that it writes files (an agent-as-tool
lists them to its caller), that a replay reuses its recorded result (`flowrun replay` and
`flowrun test` do not run it again), or that it reads files (a dry run gives it one that exists);
the manifest wins where both say something. The engine outside tools/ and tools.d/ holds no list
of built-in tool names."""

from __future__ import annotations

import ast
import shutil
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
name: props
inputs:
  question: {description: q}
models:
  s: {provider: scripted, model: s, script: script.yaml}
default_model: s
entry: boss
output: out.md
limits: {max_total_steps: 100}  # a cap above the sub-agent tree (validate --strict warns without one)
"""

# every call appends the tool's name to calls.log next to the module (outside any run folder)
MODULE = """\
from dataclasses import dataclass
from pathlib import Path

from flowrun.tools.base import ToolContext, tool
from flowrun.types import ToolResult

LOG = Path(__file__).parent / "calls.log"


def _count(name: str) -> None:
    with LOG.open("a", encoding="utf-8") as f:
        f.write(name + "\\n")


def _save(ctx: ToolContext, name: str, path: str, text: str) -> ToolResult:
    _count(name)
    target = ctx.cwd / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return ToolResult("success", f"saved {path}", context={"path_resolved": ctx.relative(target)})


async def save_note(ctx: ToolContext, *, path: str, text: str) -> ToolResult:
    return _save(ctx, "save_note", path, text)


@tool(files="write")
async def jot(ctx: ToolContext, *, path: str, text: str) -> ToolResult:
    return _save(ctx, "jot", path, text)


@tool(files="write")  # its manifest says `files: change`: the manifest wins
async def scribble(ctx: ToolContext, *, path: str, text: str) -> ToolResult:
    return _save(ctx, "scribble", path, text)


async def lookup(ctx: ToolContext, *, text: str) -> ToolResult:
    _count("lookup")
    return ToolResult.ok(f"found {text}")


@tool(replay="recorded")
async def ping(ctx: ToolContext, *, text: str) -> ToolResult:
    _count("ping")
    return ToolResult.ok(f"pong {text}")


async def tick(ctx: ToolContext, *, text: str) -> ToolResult:
    _count("tick")
    return ToolResult.ok(f"tick {text}")


def _read(ctx: ToolContext, name: str, path: str) -> ToolResult:
    _count(name)
    target = ctx.cwd / path
    if not target.is_file():
        return ToolResult.fail("NOT_FOUND", f"{path} does not exist")
    return ToolResult.ok(target.read_text(encoding="utf-8"))


@tool(files="read")
async def peek(ctx: ToolContext, *, path: str) -> ToolResult:
    return _read(ctx, "peek", path)


async def glance(ctx: ToolContext, *, path: str) -> ToolResult:
    return _read(ctx, "glance", path)


async def skim(ctx: ToolContext, *, path: str) -> ToolResult:
    return _read(ctx, "skim", path)


@dataclass
class Tally:  # this module's run-scoped state: ctx.state.of(Tally), closed when the run ends

    count: int = 0

    async def aclose(self) -> None:
        (Path(__file__).parent / "closed.log").write_text(f"closed at {self.count}\\n")


@tool(sequential=True)
async def tally(ctx: ToolContext, *, text: str) -> ToolResult:
    _count("tally")
    state = ctx.state.of(Tally)
    state.count += 1
    return ToolResult.ok(f"tally {state.count}")
"""


def tool_manifest(name: str, params: dict[str, str], **keys: Any) -> str:
    manifest = {
        "version": 1,
        "kind": "tool",
        "name": name,
        "description": f"The {name} tool of the test project.",
        "parameters": {
            "type": "object",
            "properties": {p: {"type": kind} for p, kind in params.items()},
            "required": list(params),
        },
        "implementation": {"python": f"prop_tools:{name}"},
        **keys,
    }
    return yaml.safe_dump(manifest, sort_keys=False)


WRITES = {"path": "string", "text": "string"}
TEXT = {"text": "string"}
PATH = {"path": "string"}
TOOLS = {
    "save_note": tool_manifest("save_note", WRITES, files="write"),
    "jot": tool_manifest("jot", WRITES),
    "scribble": tool_manifest("scribble", WRITES, files="change"),
    "lookup": tool_manifest("lookup", TEXT, replay="recorded"),
    "ping": tool_manifest("ping", TEXT),
    "tick": tool_manifest("tick", TEXT),
    "peek": tool_manifest("peek", PATH),
    "glance": tool_manifest("glance", PATH, files="read"),
    "skim": tool_manifest("skim", PATH),
    "tally": tool_manifest("tally", TEXT),
}


def project(tmp: Path, agents: dict[str, list[str]], script: dict[str, Any]) -> Path:
    files = {
        "prop_tools.py": MODULE,
        "script.yaml": script_manifest(script),
        **{f"tools.d/{name}.yaml": text for name, text in TOOLS.items()},
    }
    team = {
        name: {"description": f"{name} of the test project", "tools": tools} for name, tools in agents.items()
    }
    write_project(tmp, WORKFLOW, team, files)
    check = run_cli(["validate", "--strict", "."], cwd=tmp)
    assert check.returncode == 0, check.stdout + check.stderr
    return tmp


def run(tmp: Path, *extra: str) -> Path:
    proc = run_cli(["wf.yaml", "--question", "q", "--run-id", "r", *extra], cwd=tmp)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tmp / "runs" / "r"


def calls(tmp: Path) -> list[str]:
    log = tmp / "calls.log"
    return log.read_text().split() if log.exists() else []


def test_declared_writers_are_listed_to_the_caller(tmp_path: Path) -> None:
    """save_note says `files: write` in its manifest, jot with @tool(files="write"); scribble's
    decorator says write too, but its manifest says `change`, so its file is not listed."""
    writes = [
        {"name": "save_note", "arguments": {"path": "notes/by_manifest.md", "text": "a\n"}},
        {"name": "jot", "arguments": {"path": "notes/by_decorator.md", "text": "b\n"}},
        {"name": "scribble", "arguments": {"path": "notes/overridden.md", "text": "c\n"}},
    ]
    script = {
        "boss": [{"tool_calls": [{"name": "helper", "arguments": {"task": "write notes"}}]}, {"text": "ok"}],
        "helper": [{"tool_calls": writes}, {"text": "wrote the notes"}],
    }
    project(tmp_path, {"boss": ["helper"], "helper": ["save_note", "jot", "scribble"]}, script)
    run_dir = run(tmp_path)
    assert calls(tmp_path) == ["save_note", "jot", "scribble"]
    assert (run_dir / "notes" / "overridden.md").read_text() == "c\n"
    found = events(run_dir)
    [summary] = [e["result"] for e in found if e["type"] == "tool_result" and e["tool"] == "helper"]
    listed = ["notes/by_decorator.md", "notes/by_manifest.md"]
    assert summary["data"]["output_files"] == listed
    assert "Output files:\n- notes/by_decorator.md\n- notes/by_manifest.md" in summary["text"]
    [end] = [e for e in found if e["type"] == "agent_end" and e["agent"] == "helper"]
    assert end["output_files"] == listed


def test_recorded_tools_are_not_run_again_by_replay_or_test(tmp_path: Path) -> None:
    """lookup says `replay: recorded` in its manifest, ping with @tool(replay="recorded"); tick
    says nothing, so a replay runs it again (for its files) while showing the recorded result."""
    texts = [{"name": name, "arguments": {"text": "x"}} for name in ("lookup", "ping", "tick")]
    script = {"boss": [{"tool_calls": texts}, {"text": "looked up"}]}
    project(tmp_path, {"boss": ["lookup", "ping", "tick"]}, script)
    run(tmp_path)
    assert calls(tmp_path) == ["lookup", "ping", "tick"]

    proc = run_cli(["replay", "runs/r", "--into", "again", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert calls(tmp_path) == ["lookup", "ping", "tick", "tick"]
    replayed = {
        e["tool"]: e["result"]["text"] for e in events(tmp_path / "again") if e["type"] == "tool_result"
    }
    assert replayed == {"lookup": "found x", "ping": "pong x", "tick": "tick x"}

    test_file = {
        "version": 1,
        "kind": "test",
        "name": "props",
        "workflow": "../wf.yaml",
        "cassette": "../runs/r",
        "expect": {"status": "completed", "tool_calls": [{"tool": "lookup"}, {"tool": "ping"}]},
    }
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "props.flowrun.yaml").write_text(yaml.safe_dump(test_file))
    proc = run_cli(["test", "tests"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS props" in proc.stdout
    assert calls(tmp_path) == ["lookup", "ping", "tick", "tick", "tick"]


def test_declared_readers_get_an_existing_file_in_a_dry_run(tmp_path: Path) -> None:
    """The offline test provider in a --workdir of the user's (`--model test:test`, a real run):
    a tool that declares `files: read` (glance in its manifest, peek with @tool) is given a file
    that exists; one that declares nothing (skim) only a sample file the run makes, so a tool
    of unknown effect never touches the user's files. A --dry-run never works in the user's
    folder at all: its stand-in in the run folder is the agents' folder."""
    project(tmp_path, {"boss": ["peek", "glance", "skim"]}, {"boss": [{"text": "unused"}]})
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text("mine\n")
    run_dir = run(tmp_path, "--model", "test:test", "--workdir", str(work))
    found = events(run_dir)
    given = {e["tool"]: e["arguments"]["path"] for e in found if e["type"] == "tool_call"}
    assert given == {"peek": "notes.md", "glance": "notes.md", "skim": "dry-run/boss-sample.md"}
    texts = {e["tool"]: e["result"]["text"] for e in found if e["type"] == "tool_result"}
    assert texts["peek"] == texts["glance"] == "mine\n"
    assert (work / "notes.md").read_text() == "mine\n"
    shutil.rmtree(work / "dry-run")
    proc = run_cli(
        ["wf.yaml", "--question", "q", "--run-id", "dry", "--dry-run", "--workdir", str(work)], cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in work.iterdir()) == ["notes.md"]  # nothing made in the user's folder
    found = events(tmp_path / "runs" / "dry")
    given = {e["tool"]: e["arguments"]["path"] for e in found if e["type"] == "tool_call"}
    assert set(given.values()) == {"dry-run/boss-sample.md"}
    assert (tmp_path / "runs" / "dry" / "workdir" / "dry-run" / "boss-sample.md").is_file()


def test_user_tools_keep_typed_run_state_and_declare_sequential(tmp_path: Path) -> None:
    """tally keeps a count in `ctx.state.of(Tally)` across calls and agents of one run; the
    run's end closes it. It declares @tool(sequential=True), so it runs alone where the model put
    it: after the call before it, before the one after it."""
    tick = {"name": "tick", "arguments": {"text": "x"}}
    step = [tick, {"name": "tally", "arguments": {"text": "x"}}, tick]
    script = {
        "boss": [
            {"tool_calls": step},
            {"tool_calls": [{"name": "helper", "arguments": {"task": "tally once"}}]},
            {"text": "ok"},
        ],
        "helper": [{"tool_calls": [{"name": "tally", "arguments": {"text": "y"}}]}, {"text": "done"}],
    }
    project(tmp_path, {"boss": ["tally", "tick", "helper"], "helper": ["tally"]}, script)
    run_dir = run(tmp_path)
    assert calls(tmp_path) == ["tick", "tally", "tick", "tally"]
    tallies = [
        e["result"]["text"] for e in events(run_dir) if e["type"] == "tool_result" and e["tool"] == "tally"
    ]
    assert tallies == ["tally 1", "tally 2"]
    assert (tmp_path / "closed.log").read_text() == "closed at 2\n"


def test_a_bad_declaration_is_a_one_line_error(tmp_path: Path) -> None:
    """A manifest key with a value it does not take is reported by validate with its line; a
    decorator given one fails the module's import, reported as the manifest's problem."""
    project(tmp_path, {"boss": ["tick"]}, {"boss": [{"text": "ok"}]})
    manifest = tmp_path / "tools.d" / "tick.yaml"
    manifest.write_text(manifest.read_text() + "files: writes\n")
    proc = run_cli(["validate", "."], cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out
    assert "tools.d/tick.yaml:" in out and "files" in out, out

    manifest.write_text(TOOLS["tick"])
    module = tmp_path / "prop_tools.py"
    module.write_text(MODULE.replace('@tool(replay="recorded")', '@tool(replay="never")'))
    proc = run_cli(["wf.yaml", "--question", "q", "--run-id", "bad"], cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out
    assert "@tool(replay='never'): expected one of run, recorded" in out, out


# ---------------------------------------------------------------- no built-in names in the engine

# string constants that equal a built-in tool's name but are not the engine deciding by name
NOT_TOOL_NAMES = {
    # the Finish control's action tag ({"action": "finish"}), not the finish tool
    ("types.py", "finish"),
    # Claude Code's tool names translated to flowrun's: the names are the table's data
    ("manifest/ecosystem/claude_agents.py", "*"),
    # the dashboard strategy's companion tool: its check says an agent must list it
    ("runtime/context/dashboard.py", "update_dashboard"),
    # the keyword arguments of Workflow.run / resume (the ask_user callback), not the tool
    ("api/workflow.py", "ask_user"),
    ("api/resuming.py", "ask_user"),
}
# other frameworks' files translated into flowrun manifests: a translation writes the names of
# the built-ins it maps their tools and habits to (a CrewAI FileReadTool is read_file, an ADK
# exit_loop is flowrun's), as data of the manifests it writes, never to decide what a tool does
TRANSLATORS = ("manifest/foreign/",)


def builtin_tool_names() -> set[str]:
    return {yaml.safe_load(p.read_text())["name"] for p in (REPO / "tools.d").glob("*.yaml")}


def names_used_as_data(root: Path, names: set[str]) -> list[tuple[str, int, str]]:
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("tools/", *TRANSLATORS)):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
                if (rel, node.value) not in NOT_TOOL_NAMES and (rel, "*") not in NOT_TOOL_NAMES:
                    found.append((rel, node.lineno, node.value))
    return found


def test_the_engine_decides_nothing_by_a_built_in_tool_name() -> None:
    """Outside tools/ (the built-ins' code) and tools.d/ (their manifests) no module names a
    built-in tool: what the engine does with a tool follows what the tool declares."""
    names = builtin_tool_names()
    assert {"write_file", "web_search", "ask_user", "read_file"} <= names
    assert names_used_as_data(REPO / "engine" / "flowrun", names) == []


@pytest.mark.parametrize(
    "source",
    ['WRITE_TOOLS = frozenset({"write_file", "edit_file"})', 'if call.name == "ask_user": pass'],
)
def test_the_name_check_finds_a_name_used_as_data(tmp_path: Path, source: str) -> None:
    (tmp_path / "runtime").mkdir()
    (tmp_path / "runtime" / "x.py").write_text(source + "\n")
    assert names_used_as_data(tmp_path, builtin_tool_names())
