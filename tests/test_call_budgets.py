"""Per-call budgets on agent-as-tool entries through `flowrun run`, with the real SDKs against
the scripted server: a sub-agent that uses up its budget returns `partial` with what it wrote
and the run completes; a budget is capped at what the caller has left; usage per sub-tree in
usage.json and `flowrun show`; the other limits (tokens, steps) and validate's checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cli import run_cli
from support.env import WIRES, model_env
from support.project import SCRIPTED, model, script_manifest, workflow, write_files, write_project
from support.runs import events
from support.wire_server import Reply, ToolCallSpec, WireRequest, WireServer

PRICE = {"input": 1000.0, "output": 1000.0}  # each scripted call: 10 in + 5 out = $0.015


def project(
    tmp: Path, worker_budget: dict[str, Any], helper_budget: dict[str, Any], provider: str = "anthropic"
) -> None:
    team = {
        "boss": [{"worker": {"budget": worker_budget}}],
        "worker": ["write_file", {"helper": {"budget": helper_budget}}],
        "helper": ["write_file"],
    }
    # "You are the NAME agent." is what `responder` reads, and sets the scripted token counts
    agents = {name: {"prompt": f"You are the {name} agent.", "tools": tools} for name, tools in team.items()}
    spec = workflow(model(provider, price=PRICE), name="budgets", entry="boss")
    write_project(tmp, spec, agents, name="budgets.yaml")


def write(path: str) -> Reply:
    return Reply(tool_calls=[ToolCallSpec("write_file", {"path": path, "content": f"{path}\n"})])


def responder(request: WireRequest) -> Reply:
    who = request.system.removeprefix("You are the ").split(" ")[0]
    replies = {
        "boss": [
            Reply(tool_calls=[ToolCallSpec("worker", {"task": "Work."})]),
            Reply(text="Done with what I got."),
        ],
        "worker": [
            write("w.md"),
            Reply(tool_calls=[ToolCallSpec("helper", {"task": "Help."})]),
            Reply(text="worker done"),
        ],
        "helper": [write("h1.md"), write("h2.md"), write("h3.md"), Reply(text="helper done")],
    }[who]
    turn = request.assistant_turns
    return replies[turn] if turn < len(replies) else Reply(text="more")


def tool_result(evs: list[dict[str, Any]], agent: str, tool: str) -> dict[str, Any]:
    (found,) = [
        e["result"] for e in evs if e["type"] == "tool_result" and e["agent"] == agent and e["tool"] == tool
    ]
    return found


@pytest.mark.parametrize("provider", WIRES)
def test_budgets_return_partial_and_the_run_completes(tmp_path: Path, provider: str) -> None:
    project(tmp_path, {"max_cost_usd": 0.05}, {"max_cost_usd": 1.0}, provider)
    with WireServer(responder) as server:
        env = {"FLOWRUN_RETRY_BASE_S": "0.01"}
        env |= model_env(server, provider)
        proc = run_cli(["budgets.yaml", "--run-id", "r"], cwd=tmp_path, env=env)
        asked = [r.system.removeprefix("You are the ").split(" ")[0] for r in server.requests]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = tmp_path / "runs" / "r"
    evs = events(run_dir)
    assert evs[-1]["type"] == "run_end" and evs[-1]["status"] == "completed"

    # the helper's $1 budget was capped at what the worker had left after two calls ($0.05 - $0.03)
    budgets = {e["agent"]: e.get("budget") for e in evs if e["type"] == "agent_start"}
    assert budgets["boss"] is None and budgets["worker"] == {"max_cost_usd": 0.05}
    assert budgets["helper"]["max_cost_usd"] == pytest.approx(0.02)

    # the helper stopped after two calls ($0.03 >= $0.02) and handed back what it wrote ...
    helped = tool_result(evs, "worker", "helper")
    assert helped["status"] == "partial" and helped["data"]["outcome"] == "budget_exceeded"
    assert helped["data"]["output_files"] == ["h1.md", "h2.md"] and not (run_dir / "h3.md").exists()
    assert "helper stopped: its per-call budget is used up (max_cost_usd 0.02)" in helped["text"]
    # ... then the worker's own budget was used up (its sub-tree spent $0.06 of $0.05)
    worked = tool_result(evs, "boss", "worker")
    assert worked["status"] == "partial" and worked["data"]["spent"]["model_calls"] == 4
    assert worked["data"]["output_files"] == ["h1.md", "h2.md", "w.md"]
    assert worked["data"]["spent"]["cost_usd"] == pytest.approx(0.06)
    stops = [(e["agent"], e["limit"]) for e in evs if e["type"] == "call_budget_exceeded"]
    assert stops == [("helper", "max_cost_usd"), ("worker", "max_cost_usd")]
    assert asked.count("helper") == 2 and asked.count("worker") == 2 and asked.count("boss") == 2

    # tokens and cost per sub-tree
    usage = json.loads((run_dir / "usage.json").read_text())
    trees = {t["agent"]: t for t in usage["by_subtree"]}
    assert trees["boss"]["tokens"] == 90 and trees["boss"]["model_calls"] == 6
    assert trees["worker"]["tokens"] == 60 and trees["worker"]["exhausted"] == "max_cost_usd"
    assert trees["helper"]["tokens"] == 30 and trees["helper"]["parent"] == trees["worker"]["agent_id"]
    assert trees["helper"]["cost_usd"] == pytest.approx(0.03)
    shown = run_cli(["show", str(run_dir)]).stdout
    assert "budget_exceeded" in shown and "budget cost_usd 0.05" in shown
    assert "sub-tree 90 tokens, $0.0900" in shown and "sub-tree 60 tokens, $0.0600" in shown
    assert (
        "helper stopped: its per-call budget is used up (max_cost_usd 0.02): 30 tokens, $0.0300, 2 call(s)"
        in shown
    )


@pytest.mark.parametrize(
    ("budget", "limit", "helper_calls"),
    # a scripted call counts 7 tokens: 3 calls reach 21 >= 20
    [({"max_steps": 2}, "max_steps", 2), ({"max_tokens": 20}, "max_tokens", 3)],
    ids=["steps", "tokens"],
)
def test_steps_and_tokens_budgets(
    tmp_path: Path, budget: dict[str, Any], limit: str, helper_calls: int
) -> None:
    project(tmp_path, {"max_steps": 50}, budget, "scripted")
    script = {
        "boss": [{"tool_calls": [{"name": "worker", "arguments": {"task": "w"}}]}, {"text": "ok"}],
        "worker": [{"tool_calls": [{"name": "helper", "arguments": {"task": "h"}}]}, {"text": "worker ok"}],
        "helper": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": f"h{i}.md", "content": "x" * 40}}]}
            for i in range(5)
        ],
    }
    wf = yaml.safe_load((tmp_path / "budgets.yaml").read_text())
    wf["models"]["m"] = SCRIPTED
    write_files(tmp_path, {"budgets.yaml": wf, "script.yaml": script_manifest(script)})
    proc = run_cli(["budgets.yaml", "--run-id", "r"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    evs = events(tmp_path / "runs" / "r")
    helped = tool_result(evs, "worker", "helper")
    assert helped["status"] == "partial" and helped["data"]["budget"] == {
        k: float(v) for k, v in budget.items()
    }
    assert [e["limit"] for e in evs if e["type"] == "call_budget_exceeded"] == [limit]
    assert sum(e["type"] == "model_request" and e["agent"] == "helper" for e in evs) == helper_calls
    assert tool_result(evs, "boss", "worker")["status"] == "success"


def test_validate_checks_budget_keys(tmp_path: Path) -> None:
    project(tmp_path, {"max_cost": 1}, {"max_tokens": 0})
    proc = run_cli(["validate", ".", "--format", "json"], cwd=tmp_path)
    assert proc.returncode == 1
    diags = json.loads(proc.stdout)["diagnostics"]
    found = {d["path"]: (d["code"], d["message"], d["hint"]) for d in diags}
    # a key the budget does not have is named against the budget's own keys
    assert found["tools[0].worker.budget.max_cost"] == (
        "bad-config",
        "'worker' has no config key 'max_cost'",
        "did you mean 'max_cost_usd'?",
    )
    assert found["tools[1].helper.budget.max_tokens"][:2] == (
        "bad-config",
        "config of 'helper': 0 is less than the minimum of 1",
    )
