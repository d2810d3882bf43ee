"""The cost preview (`flowrun cost`, `flowrun run --estimate`): worst-case ceilings per agent and
per sub-agent tree from max_steps, max_tokens, context windows, prices, max_calls and per-call
budgets, capped by the workflow's limits, checked against figures worked out by hand; the
median and 90th percentile of earlier runs' cost and duration (real runs against the scripted
server); --estimate sends nothing; validate warns about a tree no budget caps."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli
from support.env import model_env
from support.paths import REPO
from support.project import model, workflow, write_project
from support.runs import folders
from support.wire_server import Reply, WireRequest, WireServer

RESEARCH = str(REPO / "examples" / "research.yaml")


def preview(args: list[str], cwd: Path) -> dict[str, Any]:
    proc = run_cli(["cost", *args, "--format", "json"], cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    decoded: dict[str, Any] = json.loads(proc.stdout)
    return decoded


def test_the_research_rosters_ceiling_matches_a_hand_calculation(tmp_path: Path) -> None:
    # research.yaml: every agent uses `claude` (price 3 in / 15 out / 3.75 cache write per
    # million; max_tokens 8192; context_window at its default 128,000). The dearest call sends a
    # full window priced as cache writes and gets max_tokens back:
    call = (128_000 * 3.75 + 8_192 * 15.0) / 1e6
    assert call == pytest.approx(0.60288)
    found = preview([RESEARCH], tmp_path)
    agents = found["agents"]
    assert agents["orchestrator"]["call"]["usd"] == pytest.approx(call)
    # each agent's own calls: max_steps of them (orchestrator 40, the others 25)
    assert agents["orchestrator"]["own"] == {
        "calls": 40,
        "tokens": 40 * 136_192,
        "usd": pytest.approx(40 * call),
        "unpriced": [],
    }
    for name in ("searcher", "analyzer", "writer"):
        assert agents[name]["own"]["usd"] == pytest.approx(25 * call)  # $15.072
        assert agents[name]["tree"] == agents[name]["own"]  # they call no agent
    # the orchestrator may call its sub-agents any number of times (no max_calls, no budget) ...
    subcalls = {s["agent"]: s for s in agents["orchestrator"]["subcalls"]}
    assert set(subcalls) == {"searcher", "analyzer", "writer"}
    assert subcalls["searcher"]["max_calls"] is None
    assert subcalls["searcher"]["per_call"]["usd"] == pytest.approx(25 * call)
    assert found["uncapped"]["usd"] is None and found["uncapped"]["calls"] is None  # unbounded
    # ... so the workflow's limits cap the run: max_total_steps 300 model calls (300 x $0.60288
    # = $180.86), and max_cost_usd $5 plus the one call in flight when it is reached
    assert found["limits"] == {"max_cost_usd": 5.0, "max_total_steps": 300.0}
    assert found["capped"]["calls"] == 300
    assert found["capped"]["tokens"] == 300 * 136_192
    assert found["capped"]["usd"] == pytest.approx(5 + call)  # $5.60288

    text = run_cli(["cost", RESEARCH], cwd=tmp_path).stdout
    assert "orchestrator         40 calls, $24.12" in text
    assert "cap it at: 300 model calls, $5.60" in text


def tree_project(tmp: Path, entry: dict[str, Any], limits: dict[str, Any] | None = None) -> Path:
    """boss (10 steps) -> worker (20 steps); a model at $1 in / $2 out per million tokens, a
    10,000-token window and 1,000 output tokens: one call at most $0.012."""
    priced = model("openai", context_window=10_000, max_tokens=1_000, price={"input": 1.0, "output": 2.0})
    agents = {
        "boss": {"max_steps": 10, "tools": [{"worker": entry} if entry else "worker"]},
        "worker": {"max_steps": 20, "tools": ["read_file"]},
    }
    agents = {name: {"prompt": f"You are the {name} agent.", **keys} for name, keys in agents.items()}
    spec = workflow(priced, name="tree", entry="boss", limits=limits or None)
    return write_project(tmp, spec, agents, name="tree.yaml")


def test_max_calls_and_per_call_budgets_bound_a_tree(tmp_path: Path) -> None:
    call = (10_000 * 1.0 + 1_000 * 2.0) / 1e6  # $0.012
    tree_project(tmp_path, {"max_calls": 3})
    boss = preview(["tree.yaml"], tmp_path)["agents"]["boss"]
    # boss: 10 calls ($0.12); each worker call 20 calls ($0.24), at most 3 of them
    assert boss["own"]["usd"] == pytest.approx(10 * call)
    assert boss["tree"]["calls"] == 10 + 3 * 20
    assert boss["tree"]["usd"] == pytest.approx(10 * call + 3 * 20 * call)  # $0.84

    # a per-call budget caps each worker call at $0.10 plus the call in flight ($0.112)
    tree_project(tmp_path, {"max_calls": 3, "budget": {"max_cost_usd": 0.1}})
    boss = preview(["tree.yaml"], tmp_path)["agents"]["boss"]
    assert boss["subcalls"][0]["per_call"]["usd"] == pytest.approx(0.1 + call)
    assert boss["tree"]["usd"] == pytest.approx(10 * call + 3 * (0.1 + call))
    # a model-call budget: 5 calls of each worker call
    tree_project(tmp_path, {"max_calls": 3, "budget": {"max_steps": 5}})
    boss = preview(["tree.yaml"], tmp_path)["agents"]["boss"]
    assert boss["tree"]["calls"] == 10 + 3 * 5 and boss["tree"]["usd"] == pytest.approx(25 * call)
    # --model changes the price: a model nobody prices leaves the dollars unknown
    found = preview(["tree.yaml", "--model", "openai:house-model-7"], tmp_path)
    assert found["agents"]["boss"]["tree"]["unpriced"] == ["openai:house-model-7"]


def test_validate_warns_about_a_tree_no_budget_caps(tmp_path: Path) -> None:
    tree_project(tmp_path, {})
    proc = run_cli(["validate", "tree.yaml"], cwd=tmp_path)
    assert proc.returncode == 0
    assert "the worst case of boss's sub-agent tree (worker) is unbounded" in proc.stdout
    assert "limits.max_cost_usd" in proc.stdout
    tree_project(tmp_path, {"max_calls": 3})
    proc = run_cli(["validate", "tree.yaml"], cwd=tmp_path)
    assert "is 70 model calls, $0.84, and no budget caps it" in proc.stdout
    tree_project(tmp_path, {}, limits={"max_cost_usd": 2})
    proc = run_cli(["validate", "--strict", "tree.yaml"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout


def history_project(tmp: Path) -> None:
    priced = model("openai", price={"input": 1000.0, "output": 1000.0})
    inputs = {"size": {"type": "integer"}}
    spec = workflow(priced, name="hist", inputs=inputs, entry="solo", task="size {{ size }}")
    write_project(tmp, spec, {"solo": {"prompt": "You answer."}}, name="hist.yaml")


def sized(request: WireRequest) -> Reply:
    size = int(request.last_user_text.split()[-1])
    return Reply(text="ok", usage=(size, 5))  # $ (size + 5) / 1000


def span(run_dir: Path) -> float:
    times = [json.loads(line)["t"] for line in (run_dir / "events.jsonl").read_text().splitlines()]
    return times[-1] - times[0]


def test_earlier_runs_give_the_median_and_90th_percentile(tmp_path: Path) -> None:
    history_project(tmp_path)
    with WireServer(sized) as server:
        env = model_env(server, "openai")
        for size in (10, 20, 40):
            proc = run_cli(
                ["hist.yaml", "--size", str(size), "--run-id", f"s{size}", "-q"], cwd=tmp_path, env=env
            )
            assert proc.returncode == 0, proc.stdout + proc.stderr
        dry = run_cli(["hist.yaml", "--size", "5", "--dry-run", "-q"], cwd=tmp_path)  # left out
        assert dry.returncode == 0
        served = len(server.requests)
        found = preview(["hist.yaml"], tmp_path)
        estimated = run_cli(["hist.yaml", "--size", "99", "--estimate"], cwd=tmp_path, env=env)
        assert len(server.requests) == served  # --estimate sent nothing
    history = found["history"]
    # the runs cost $0.015, $0.025, $0.045: (10 + 5), (20 + 5), (40 + 5) tokens at $1000 per million
    assert history["runs"] == 3 and history["priced_runs"] == 3
    assert history["cost_median"] == pytest.approx(0.025)
    # 90th percentile, interpolated: 0.025 + 0.8 x (0.045 - 0.025)
    assert history["cost_p90"] == pytest.approx(0.041)
    spans = [span(tmp_path / "runs" / f"s{size}") for size in (10, 20, 40)]
    assert history["duration_median_s"] == pytest.approx(statistics.median(spans))

    assert estimated.returncode == 0, estimated.stdout + estimated.stderr
    assert "cost preview of hist" in estimated.stdout
    assert "earlier runs of hist in runs: 3" in estimated.stdout
    assert "cost: median $0.0250, 90th percentile $0.0410 (3 priced)" in estimated.stdout
    assert len(folders(tmp_path / "runs")) == 4  # the three runs and the dry run: no new folder


def test_a_foreach_over_a_list_input_is_bounded_by_the_inputs_given(tmp_path: Path) -> None:
    workflow = str(REPO / "examples" / "research_foreach.yaml")
    unknown = preview([workflow], tmp_path)
    assert unknown["uncapped"]["calls"] is None  # one searcher per question: only the run knows
    two = preview([workflow, "--questions", '["a?", "b?"]'], tmp_path)
    roots = {r["agent"]: r["times"] for r in two["roots"]}
    assert roots == {"searcher": 2, "writer": 1}
    searcher, writer = two["agents"]["searcher"]["tree"], two["agents"]["writer"]["tree"]
    assert two["uncapped"]["calls"] == 2 * searcher["calls"] + writer["calls"]
    assert two["uncapped"]["usd"] == pytest.approx(2 * searcher["usd"] + writer["usd"])
