"""Arguments reach a tool as the model sent them: a `default` is filled in only where it is a
value its own schema accepts (a descriptive "None", an enum's "N/A" or a null for an integer is
not), an argument the schema does not declare is passed on where the schema allows it and the
tool can take it, and refused with INVALID_PARAM naming it where it cannot (never dropped while
the call reports success); `validate` warns of a default outside its own schema. Through the CLI,
with a scripted model and Python tools that write down what they received."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import yaml
from support.cli import run_cli

TOOLS = """
import json
from pathlib import Path

from flowrun.tools.base import ToolContext
from flowrun.types import ToolResult


async def record(ctx: ToolContext, path: str, **rest: object) -> ToolResult:
    Path("received.json").write_text(json.dumps({"path": path, **rest}, sort_keys=True))
    return ToolResult.ok("recorded")


async def strict(ctx: ToolContext, path: str, depth: int = 1) -> ToolResult:
    Path("strict.json").write_text(json.dumps({"path": path, "depth": depth}))
    return ToolResult.ok("done")
"""

RECORD = {
    "version": 1,
    "kind": "tool",
    "name": "record",
    "description": "Record what it is given.",
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "name": {"type": "string", "description": "a file name to match", "default": "None"},
            "unit": {"enum": ["seconds", "milliseconds"], "default": "N/A"},
            "count": {"type": "integer", "default": None},
            "mode": {"enum": ["fast", "slow"], "default": "fast"},  # a valid default: filled in
        },
        "required": ["path"],
        "additionalProperties": True,
    },
    "implementation": {"python": "mytools:record"},
}
STRICT = {
    "version": 1,
    "kind": "tool",
    "name": "strict",
    "description": "Take a path and a depth only.",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "depth": {"type": "integer", "default": 2}},
        "required": ["path"],
    },
    "implementation": {"python": "mytools:strict"},
}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"text": "", "tool_calls": [{"name": name, "arguments": arguments}]}


def project(root: Path) -> None:
    (root / "tools.d").mkdir(parents=True)
    (root / "agents.d").mkdir()
    (root / "mytools.py").write_text(textwrap.dedent(TOOLS))
    (root / "tools.d" / "record.yaml").write_text(yaml.safe_dump(RECORD))
    (root / "tools.d" / "strict.yaml").write_text(yaml.safe_dump(STRICT))
    agent = {
        "version": 1,
        "kind": "agent",
        "name": "boss",
        "prompt": "You work.",
        "tools": ["record", "strict"],
    }
    (root / "agents.d" / "boss.yaml").write_text(yaml.safe_dump(agent))
    replies = {
        "boss": [
            call("record", path=".", extra=1),
            call("strict", path=".", extra=1),
            call("strict", path="."),
            {"text": "done"},
        ]
    }
    (root / "s.yaml").write_text(yaml.safe_dump({"version": 1, "kind": "script", "agents": replies}))
    workflow = {
        "version": 1,
        "kind": "workflow",
        "name": "args",
        "models": {"s": {"provider": "scripted", "model": "s", "script": "s.yaml"}},
        "default_model": "s",
        "entry": "boss",
        "task": "Work.",
    }
    (root / "wf.yaml").write_text(yaml.safe_dump(workflow))


def results(run_dir: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    return [e["result"] for e in lines if e["type"] == "tool_result"]


def test_arguments_reach_the_tool_as_sent(tmp_path: Path) -> None:
    project(tmp_path)
    done = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run_dir = tmp_path / "runs" / "r"
    received = json.loads((tmp_path / "received.json").read_text())  # (the run's process's folder)
    # only the valid default is filled in; the undeclared argument is passed on (the schema
    # allows it and the function takes **rest)
    assert received == {"path": ".", "extra": 1, "mode": "fast"}
    first, refused, ran = results(run_dir)
    assert first["status"] == "success"
    # `strict` declares no `extra` and cannot take it: refused, naming it, and not run
    assert refused["status"] == "error" and refused["error"]["code"] == "INVALID_PARAM"
    assert "'extra'" in refused["text"] and "(its arguments: depth, path)" in refused["text"]
    assert ran["status"] == "success"
    assert json.loads((tmp_path / "strict.json").read_text()) == {"path": ".", "depth": 2}


def test_validate_warns_of_a_default_outside_its_own_schema(tmp_path: Path) -> None:
    project(tmp_path)
    done = run_cli(["validate", "."], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr  # a warning, not an error
    warned = [line for line in done.stdout.splitlines() if "bad-default" in line]
    assert len(warned) == 3, done.stdout  # name, unit and count; not mode
    for name in ("name", "unit", "count"):
        assert any(f"the default of '{name}'" in line and "tools.d/record.yaml:" in line for line in warned)
