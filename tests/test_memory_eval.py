"""The memory eval (examples/evals/memory.eval.yaml) through `flowrun eval`, over both wire
formats: the librarian, scripted as a model that uses its memory (it goes straight to the page
when its index says where the answer is, and searches the corpus otherwise), answers the same
question twice, one run after the other, with a fresh memory; the second run takes fewer steps
and costs less because of what the first wrote, and the graders on it pass."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.cli import run_cli
from support.env import WIRES, model_env
from support.paths import REPO
from support.wire_server import Reply, WireRequest, WireServer, call, calls

PAGE = "corpus/library/heapq.md"
NOTE = f"- heapq.nsmallest: {PAGE}\n"
ANSWER = f"heapq.nsmallest(n, iterable) returns the n smallest items ({PAGE})."


def librarian(request: WireRequest) -> Reply:
    """A model that reads its memory: the note in its index block sends it straight to the page."""
    if f'<memory-index path="/memories/MEMORY.md">\n{NOTE}' in request.system:
        plan = [calls(call("read_file", path=PAGE)), Reply(ANSWER)]
    else:
        plan = [
            calls(call("grep", pattern="smallest", path="corpus")),
            calls(call("read_file", path=PAGE)),
            calls(call("memory", command="create", path="/memories/MEMORY.md", file_text=NOTE)),
            Reply(ANSWER),
        ]
    turn = request.assistant_turns
    return plan[turn] if turn < len(plan) else Reply(ANSWER)


@pytest.mark.parametrize("wire", WIRES)
def test_the_second_run_takes_fewer_steps_because_of_what_the_first_wrote(tmp_path: Path, wire: str) -> None:
    evals = shutil.copytree(
        REPO / "examples" / "evals", tmp_path / "evals", ignore=shutil.ignore_patterns("research*", "rubrics")
    )
    model = "claude" if wire == "anthropic" else "gpt"
    with WireServer(librarian) as server:
        proc = run_cli(
            ["eval", str(evals / "memory.eval.yaml"), "--model", model, "--out", "out", "--json", "r.json"],
            cwd=tmp_path,
            env=model_env(server, wire),
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    first, second = report["variants"][0]["runs"]
    assert (first["case"], second["case"]) == ("first", "second")
    assert all(g["passed"] for run in (first, second) for g in run["graders"]), [
        first["graders"],
        second["graders"],
    ]
    steps = {run["case"]: run["steps"] for run in (first, second)}
    cost = {run["case"]: run["cost_usd"] for run in (first, second)}  # (the tokens, priced)
    assert steps == {"first": 4, "second": 2} and 0 < cost["second"] < cost["first"]
    # the memory was the eval's own (`memory: fresh`), never the librarian's
    assert (
        tmp_path / "out" / "default" / "memory" / "project" / "librarian" / "MEMORY.md"
    ).read_text() == NOTE
    assert not (evals / ".flowrun").exists()


def test_the_memory_eval_validates_strictly_and_dry_runs_without_touching_a_memory(tmp_path: Path) -> None:
    example = REPO / "examples" / "evals" / "memory.eval.yaml"
    checked = run_cli(["validate", "--strict", str(example)])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    proc = run_cli(["eval", str(example), "--dry-run", "--min-score", "0", "--out", "out"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (REPO / "examples" / "evals" / ".flowrun").exists()
    assert not (tmp_path / "out" / "default" / "memory").exists()  # a dry run works on copies
