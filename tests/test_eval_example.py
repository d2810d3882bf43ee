"""The example eval set of the research roster (examples/evals/research.eval.yaml): it passes
`validate --strict`, runs in the dry run (the test provider answers the judge through its
schema), and against the scripted wire server over both wire formats gives the expected
scores (the team as tests/test_e2e_research.py scripts it, writing a cited report)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli
from support.env import WIRES, model_env
from support.paths import REPO
from support.wire_server import Reply, Script, ToolCallSpec, WireRequest, WireServer
from test_e2e_research import MATCH

EXAMPLE = REPO / "examples" / "evals" / "research.eval.yaml"
REPORT = (
    "# {title}\n\nPython's sort is stable [1]; bisect.insort keeps a list sorted [2]; "
    "heapq.nsmallest returns the n smallest items [3].\n\n"
    "## Sources\n\n[1] file://corpus/howto/sorting.md\n[2] file://corpus/library/bisect.md\n"
    "[3] file://corpus/library/heapq.md\n"
)
JUDGE_SCORE = 0.75


def team() -> Script:
    replies = {
        "orchestrator": [
            Reply(
                tool_calls=[ToolCallSpec("searcher", {"task": "Find it", "output_dir": "workspace/search"})]
            ),
            Reply(tool_calls=[ToolCallSpec("writer", {"task": "Write the report", "context_files": []})]),
            Reply(text="The report is complete."),
        ],
        "searcher": [
            Reply(tool_calls=[ToolCallSpec("web_search", {"query": "python sorting bisect heapq"})]),
            Reply(text="Found the pages."),
        ],
        "writer": [
            Reply(
                tool_calls=[
                    ToolCallSpec(
                        "write_file", {"path": "report.md", "content": REPORT.format(title="Answer")}
                    )
                ]
            ),
            Reply(text="Report written to report.md."),
        ],
    }
    return Script(replies, MATCH)


class Team:
    def __init__(self) -> None:
        self.script = team()

    def __call__(self, request: WireRequest) -> Reply:
        if "You are the judge" in request.system:
            verdict = {"score": JUDGE_SCORE, "reason": "correct and cited"}
            if request.api == "anthropic":
                return Reply(tool_calls=[ToolCallSpec("final_answer", verdict)])
            return Reply(text=json.dumps(verdict))
        return self.script(request)


def test_the_example_validates_strictly() -> None:
    proc = run_cli(["validate", "--strict", str(EXAMPLE)])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_example_runs_in_the_dry_run(tmp_path: Path) -> None:
    proc = run_cli(["eval", str(EXAMPLE), "--dry-run", "--json", "r.json", "--min-score", "0"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    runs = report["variants"][0]["runs"]
    assert [r["case"] for r in runs] == ["sorting-stability", "bisect-insort", "heapq-smallest"]
    assert all(r["status"] == "completed" for r in runs)
    judge = next(g for g in runs[0]["graders"] if g["name"] == "judge")
    assert not judge["error"] and 0 <= judge["score"] <= 1  # the test provider answered its schema
    # below the eval set's min_score (a dry run writes no real report): exit 1
    strict = run_cli(["eval", str(EXAMPLE), "--dry-run", "-q"], cwd=tmp_path)
    assert strict.returncode == 1 and "threshold default overall" in strict.stdout


@pytest.mark.parametrize("wire", WIRES)
def test_the_example_scores_a_cited_report(tmp_path: Path, wire: str) -> None:
    with WireServer(Team()) as server:
        env = model_env(server, *WIRES)
        args = ["eval", str(EXAMPLE), "--json", "r.json"]
        if wire == "openai":
            args += ["--model", "openai:gpt-test"]
        proc = run_cli(args, cwd=tmp_path, env=env)
        apis = {r.api for r in server.requests if "You are the judge" not in r.system}
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert apis == {wire}
    report = json.loads((tmp_path / "r.json").read_text())
    variant = report["variants"][0]
    expected = (6 + JUDGE_SCORE) / 7  # every deterministic grader holds; the judge gives 0.75
    assert [c["mean"] for c in variant["cases"]] == [pytest.approx(expected)] * 3
    assert variant["score"] == pytest.approx(expected)
    assert variant["graders"]["citations"] == 1 and variant["graders"]["structure"] == 1
