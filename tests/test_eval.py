"""`flowrun eval` through the command line, with the real `openai` and `anthropic` SDKs talking
to the scripted wire server: an eval set with deterministic graders and a scripted judge gives
the expected scores, pass@k over `--repeat 3` where one repeat fails, the exit code follows the
thresholds, two variants side by side, a baseline, the report files, and `--record` then
`--offline` grading again identically with the server stopped."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from support.cli import run_cli
from support.env import WIRES
from support.project import script_manifest, write_files
from support.wire_server import Reply, ToolCallSpec, WireRequest, WireServer

WORKFLOW = """\
version: 1
kind: workflow
name: qa
inputs:
  question: {description: the question}
models:
  m: {MODEL: m}
  m2: {MODEL: m2}
  judge: {MODEL: judge-model}
default_model: m
entry: answerer
task: "Question: {{ question }}"
output: answer.md
"""
MODEL = {
    "openai": "provider: openai-compatible, base_url: 'BASE', model: NAME, stream: false, "
    "price: {input: 1000, output: 2000}",
    "anthropic": "provider: anthropic, base_url: 'BASE', api_key_env: TEST_ANTHROPIC_KEY, model: NAME, "
    "stream: true, price: {input: 1000, output: 2000}",
}
AGENT = """\
version: 1
kind: agent
name: answerer
prompt: You answer questions.
tools: [write_file]
"""
EVALSET = """\
version: 1
kind: evalset
name: qa-basics
workflow: qa.yaml
cases:
  - id: capital
    inputs: {question: What is the capital of France?}
    expected: {term: Paris}
  - id: sum
    inputs: {question: What is 2 + 2?}
    expected: {term: "4"}
graders:
  - name: mentions
    output: {contains: "{{ expected.term }}"}
  - status: completed
  - trajectory: {called: [write_file], never: [execute_shell], max_calls: {"*": 2}}
  - budget: {max_steps: 3}
  - judge:
      model: judge
      rubric: |
        Does this answer {{ inputs.question }} correctly? The answer: {{ output }}
"""
# what the answerer writes for each question (m2: the sum right, the capital wrong)
ANSWERS = {"capital": "Paris is the capital of France.", "2 + 2": "2 + 2 is 5."}
ANSWERS_M2 = {"capital": "It is Lyon.", "2 + 2": "2 + 2 is 4."}
# what the judge gives an answer that contains...
JUDGED = {"Paris": 0.9, "is 5": 0.2, "is 4": 0.8, "Lyon": 0.1}

# capital: mentions 1, status 1, trajectory 1, budget 1, judge 0.9 -> 0.98
# sum:     mentions 0, status 1, trajectory 1, budget 1, judge 0.2 -> 0.64
CAPITAL, SUM = 4.9 / 5, 3.2 / 5


def judge_reply(request: WireRequest, verdict: dict[str, Any]) -> Reply:
    """The judge answers through structured output: a JSON text (OpenAI's response_format), or
    the forced final_answer tool (Anthropic)."""
    if request.api == "anthropic":
        assert request.tool_names == ["final_answer"]
        return Reply(tool_calls=[ToolCallSpec("final_answer", verdict)])
    assert request.body["response_format"]["type"] == "json_schema"
    return Reply(text=json.dumps(verdict))


class Scripted:
    """The answerer writes answer.md from ANSWERS (ANSWERS_M2 for model m2), then says so; the
    judge scores by what the answer contains. `flaky`: the n-th first turn of the capital
    question answers Lyon instead (one failing repeat)."""

    def __init__(self, flaky: int | None = None) -> None:
        self.flaky = flaky
        self.capital_turns = 0
        self.lock = threading.Lock()

    def __call__(self, request: WireRequest) -> Reply:
        if "You are the judge" in request.system:
            answer = request.last_user_text.split("The answer:")[-1]
            score = next((s for k, s in JUDGED.items() if k in answer), 0.0)
            return judge_reply(request, {"score": score, "reason": f"judged {answer.strip()[:40]}"})
        question = re.search(r"Question: (.*)", request.last_user_text)
        text = question.group(1) if question else ""
        table = ANSWERS_M2 if request.body.get("model") == "m2" else ANSWERS
        if request.assistant_turns == 0:
            answer = next(a for k, a in table.items() if k in text)
            if "capital" in text and self.flaky is not None:
                with self.lock:
                    self.capital_turns += 1
                    if self.capital_turns == self.flaky:
                        answer = "It is Lyon."
            return Reply(tool_calls=[ToolCallSpec("write_file", {"path": "answer.md", "content": answer})])
        return Reply(text="Written to answer.md.")


def project(folder: Path, server: WireServer, wire: str) -> Path:
    base = server.base_url(wire)
    text = WORKFLOW
    for name in ("m", "m2", "judge-model"):
        model = MODEL[wire].replace("BASE", base).replace("NAME", name)
        text = text.replace("{MODEL: " + name + "}", "{" + model + "}")
    files = {"qa.yaml": text, "agents.d/answerer.yaml": AGENT, "qa.eval.yaml": EVALSET}
    return write_files(folder, files) / "qa.eval.yaml"


def env(wire: str) -> dict[str, str]:
    return {"OPENAI_API_KEY": "test-key"} if wire == "openai" else {"TEST_ANTHROPIC_KEY": "test-key"}


def evaluate(evalset: Path, wire: str, *args: str) -> tuple[int, str, dict[str, Any]]:
    report = evalset.parent / f"report-{len(list(evalset.parent.glob('report-*')))}.json"
    proc = run_cli(["eval", str(evalset), "--json", str(report), *args], cwd=evalset.parent, env=env(wire))
    output = proc.stdout + proc.stderr
    assert "Traceback" not in output, output
    data = json.loads(report.read_text()) if report.is_file() else {}
    return proc.returncode, output, data


def cases(data: dict[str, Any], variant: int = 0) -> dict[str, dict[str, Any]]:
    return {c["case"]: c for c in data["variants"][variant]["cases"]}


def graders_of(data: dict[str, Any], case: str, variant: int = 0) -> dict[str, dict[str, Any]]:
    run = next(r for r in data["variants"][variant]["runs"] if r["case"] == case)
    return {g["name"]: g for g in run["graders"]}


@pytest.mark.parametrize("wire", WIRES)
def test_deterministic_graders_and_a_scripted_judge_give_the_expected_scores(
    tmp_path: Path, wire: str
) -> None:
    with WireServer(Scripted()) as server:
        evalset = project(tmp_path, server, wire)
        code, out, data = evaluate(evalset, wire, "--out", str(tmp_path / "out"))
        judged = [r for r in server.requests if "You are the judge" in r.system]
    assert code == 0, out  # no threshold set
    assert {r.api for r in server.requests} == {wire}
    assert len(judged) == 2  # one judge call per run
    scores = cases(data)
    assert scores["capital"]["mean"] == pytest.approx(CAPITAL)
    assert scores["sum"]["mean"] == pytest.approx(SUM)
    assert data["variants"][0]["score"] == pytest.approx((CAPITAL + SUM) / 2)
    sum_graders = graders_of(data, "sum")
    assert sum_graders["mentions"]["score"] == 0 and "contains '4'" in sum_graders["mentions"]["detail"]
    assert sum_graders["judge"]["score"] == pytest.approx(0.2)
    assert "judged 2 + 2 is 5" in sum_graders["judge"]["detail"]
    assert {g["score"] for n, g in sum_graders.items() if n not in ("mentions", "judge")} == {1.0}
    assert scores["capital"]["passes"] == 1 and scores["sum"]["passes"] == 0
    # each case's run is a normal run folder of the eval's output folder
    run_dir = Path(graders_of(data, "capital") and data["variants"][0]["runs"][0]["run_dir"])
    assert run_dir.parent == tmp_path / "out" / "default" / "runs"
    assert (run_dir / "answer.md").read_text() == ANSWERS["capital"]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    # cost from each run's usage.json: 3 calls of 10 + 5 tokens at $1000/$2000 per million
    assert data["variants"][0]["runs"][0]["cost_usd"] == pytest.approx(2 * 0.02)
    assert data["judge_cost_usd"] == pytest.approx(2 * 0.02)
    assert "capital" in out and "0.98" in out and "0.64" in out  # the terminal table


@pytest.mark.parametrize("wire", WIRES)
def test_the_exit_code_follows_the_thresholds(tmp_path: Path, wire: str) -> None:
    with WireServer(Scripted()) as server:
        evalset = project(tmp_path, server, wire)
        passing, out, _ = evaluate(evalset, wire, "--min-score", "0.8")
        assert passing == 0, out
        below, out, data = evaluate(evalset, wire, "--min-score", "0.85")
        assert below == 1, out
        assert "threshold default overall: 0.810 (needs 0.850) BELOW" in out
        assert data["ok"] is False
        grader, out, data = evaluate(evalset, wire, "--min-score", "0.8", "--min-score", "mentions=0.6")
        assert grader == 1, out  # the mentions grader's mean is 0.5
        assert [g["what"] for g in data["gates"] if not g["ok"]] == ["mentions"]
        # min_score in the manifest, a judge's own pass mark
        text = evalset.read_text().replace("name: qa-basics", "name: qa-basics\nmin_score: 0.75")
        evalset.write_text(text.replace("  - judge:\n", "  - min_score: 0.5\n    judge:\n"))
        manifest, out, data = evaluate(evalset, wire)
        assert manifest == 0, out
        assert data["min_score"] == 0.75 and data["grader_min"] == {"judge": 0.5}
        assert [g["what"] for g in data["gates"]] == ["overall", "judge"]
        usage, out, _ = evaluate(evalset, wire, "--min-score", "1.5")
        assert usage == 2 and "a score is from 0 to 1" in out


@pytest.mark.parametrize("wire", WIRES)
def test_pass_at_k_over_three_repeats_where_one_fails(tmp_path: Path, wire: str) -> None:
    with WireServer(Scripted(flaky=2)) as server:
        evalset = project(tmp_path, server, wire)
        code, out, data = evaluate(evalset, wire, "--repeat", "3", "--concurrency", "3")
    assert code == 0, out
    capital = cases(data)["capital"]
    assert capital["runs"] == 3 and capital["passes"] == 2
    assert capital["pass_at_k"] is True and capital["pass_all"] is False
    lyon = 3.1 / 5  # mentions 0, status, trajectory and budget 1, judge 0.1
    assert capital["low"] == pytest.approx(lyon) and capital["high"] == pytest.approx(CAPITAL)
    assert capital["mean"] == pytest.approx((2 * CAPITAL + lyon) / 3)
    assert capital["stdev"] > 0
    variant = data["variants"][0]
    assert variant["pass_at_1"] == pytest.approx(2 / 6)  # sum never passes
    assert variant["pass_at_k"] == pytest.approx(1 / 2)
    assert "pass@3" in out
    assert sorted(Path(r["run_dir"]).name for r in variant["runs"] if r["case"] == "capital") == [
        "capital.r1",
        "capital.r2",
        "capital.r3",
    ]


def test_one_repeat_shows_pass_at_1_once(tmp_path: Path) -> None:
    """With `--repeat 1` pass@k is pass@1: the table and the HTML report show it once."""
    with WireServer(Scripted()) as server:
        evalset = project(tmp_path, server, "openai")
        html = tmp_path / "report.html"
        code, out, _ = evaluate(evalset, "openai", "--repeat", "1", "--html", str(html))
    assert code == 0, out
    assert out.count("pass@1") == 1, out
    assert html.read_text().count("pass@1") == 1


def test_runs_in_worker_processes_score_as_in_one(tmp_path: Path) -> None:
    """`--processes 2`: the runs of the batch are spread over two worker processes (the batch
    folder records them); each run is graded as it ends, in the eval's process, as before."""
    with WireServer(Scripted()) as server:
        evalset = project(tmp_path, server, "openai")
        out = tmp_path / "out"
        args = ["--processes", "2", "--concurrency", "4", "--repeat", "2", "--out", str(out)]
        code, output, data = evaluate(evalset, "openai", *args)
        judged = [r for r in server.requests if "You are the judge" in r.system]
    assert code == 0, output
    assert len(judged) == 4
    assert json.loads((out / "default" / "batch.json").read_text())["options"]["processes"] == 2
    scores = cases(data)
    assert scores["capital"]["mean"] == pytest.approx(CAPITAL) and scores["capital"]["runs"] == 2
    assert scores["sum"]["mean"] == pytest.approx(SUM)
    bad = run_cli(["eval", str(evalset), "--processes", "two"], cwd=tmp_path, env=env("openai"))
    assert bad.returncode == 2 and "--processes must be a whole number" in bad.stdout + bad.stderr


def test_an_eval_in_the_same_second_as_another_gets_a_folder_of_its_own(tmp_path: Path) -> None:
    """The default `evals/NAME-TIMESTAMP` is claimed, never shared: with the names of the next
    two minutes taken (another eval, each with a finished run in it), this one runs every case
    in a `-2` folder and leaves the others as they were."""
    with WireServer(Scripted()) as server:
        evalset = project(tmp_path, server, "openai")
        now = time.time()
        taken = {
            tmp_path / "evals" / f"qa-basics-{time.strftime('%Y%m%d-%H%M%S', time.localtime(now + s))}"
            for s in range(120)
        }
        for folder in taken:
            (folder / "default").mkdir(parents=True)
            (folder / "default" / "marker").write_text("another eval's")
        code, output, data = evaluate(evalset, "openai")
        answered = [r for r in server.requests if "You are the judge" not in r.system]
    assert code == 0, output
    runs = Path(data["folder"])
    assert runs.parent == tmp_path / "evals" and runs not in taken, runs
    assert runs.name.endswith("-2") and runs.with_name(runs.name[:-2]) in taken, runs
    assert len(answered) == 4  # both cases run here: two model calls each
    assert all((f / "default" / "marker").read_text() == "another eval's" for f in taken)
    assert sorted(p.name for p in (tmp_path / "evals").iterdir()) == sorted(
        [*(f.name for f in taken), runs.name]
    )


@pytest.mark.parametrize("wire", WIRES)
def test_two_variants_compared_side_by_side_and_with_a_baseline(tmp_path: Path, wire: str) -> None:
    with WireServer(Scripted()) as server:
        evalset = project(tmp_path, server, wire)
        code, out, first = evaluate(
            evalset, wire, "--variant", "base=--model m", "--variant", "next=--model m2"
        )
        models = {r.body.get("model") for r in server.requests if "You are the judge" not in r.system}
        judges = {r.body.get("model") for r in server.requests if "You are the judge" in r.system}
        baseline = tmp_path / "baseline.json"
        baseline.write_text(json.dumps(first))
        html = tmp_path / "report.html"
        junit = tmp_path / "junit.xml"
        again, out2, _ = evaluate(
            evalset,
            wire,
            "--variant",
            "next=--model m2",
            "--baseline",
            str(baseline),
            "--html",
            str(html),
            "--junit",
            str(junit),
        )
    assert code == 0 and again == 0, out + out2
    assert models == {"m", "m2"} and judges == {"judge-model"}  # the judge stays the same
    base, nxt = first["variants"]
    assert (base["name"], base["model"], nxt["name"], nxt["model"]) == ("base", "m", "next", "m2")
    assert cases(first, 1)["sum"]["mean"] == pytest.approx(4.8 / 5)  # m2 gets it right
    assert cases(first, 1)["capital"]["mean"] == pytest.approx(3.1 / 5)  # and this one wrong
    assert nxt["score"] == pytest.approx((4.8 + 3.1) / 10) and base["score"] == pytest.approx(
        (CAPITAL + SUM) / 2
    )
    header = next(line for line in out.splitlines() if "case" in line)
    assert "base" in header and "next" in header  # one column per variant
    # compared with the baseline's variant of the same name: the same scores
    page = html.read_text()
    assert ">same</span>" in page and ">improved<" not in page and ">regressed<" not in page
    assert "sum.r1" in page and "flowrun show --messages" in page and "events.jsonl" in page
    suites = ET.parse(junit).getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == ["qa-basics[next]"]
    assert suites[0].get("tests") == "2" and suites[0].get("failures") == "1"  # capital


@pytest.mark.parametrize("wire", WIRES)
def test_baseline_shows_what_improved_and_regressed(tmp_path: Path, wire: str) -> None:
    with WireServer(Scripted()) as server:
        evalset = project(tmp_path, server, wire)
        _, _, before = evaluate(evalset, wire)
        baseline = tmp_path / "baseline.json"
        baseline.write_text(json.dumps(before))
        html = tmp_path / "r.html"
        code, out, _ = evaluate(
            evalset, wire, "--model", "m2", "--baseline", str(baseline), "--html", str(html)
        )
    assert code == 0, out
    page = html.read_text()
    assert ">improved</span>" in page and ">regressed</span>" in page  # sum improves, capital regresses
    assert "0.96 (1/1) ▲0.32" in out and "0.62 (0/1) ▼0.36" in out


@pytest.mark.parametrize("wire", WIRES)
def test_record_then_offline_grades_identically_with_no_server(tmp_path: Path, wire: str) -> None:
    with WireServer(Scripted()) as server:
        evalset = project(tmp_path, server, wire)
        code, out, live = evaluate(evalset, wire, "--record", "--repeat", "2")
    assert code == 0, out
    cassettes = tmp_path / "cassettes" / "qa-basics"
    assert (cassettes / "default" / "capital.r2" / "events.jsonl").is_file()
    assert len((cassettes / "judges.jsonl").read_text().splitlines()) == 4
    # the server is gone, and no key is set
    proc = run_cli(
        ["eval", str(evalset), "--offline", "--json", "offline.json", "--min-score", "0.8"], cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    offline = json.loads((tmp_path / "offline.json").read_text())
    assert offline["offline"] is True
    for key in ("score", "pass_at_1", "pass_at_k", "graders"):
        assert offline["variants"][0][key] == live["variants"][0][key], key
    assert [(c["case"], c["mean"]) for c in offline["variants"][0]["cases"]] == [
        (c["case"], c["mean"]) for c in live["variants"][0]["cases"]
    ]
    assert offline["judge_cost_usd"] == live["judge_cost_usd"]
    # a rubric edited since the recording: its judge cannot be answered from it
    evalset.write_text(evalset.read_text().replace("correctly?", "correctly and briefly?"))
    edited = run_cli(["eval", str(evalset), "--offline", "--json", "edited.json", "-v"], cwd=tmp_path)
    assert "the judge's prompt differs from the recorded one" in edited.stdout
    assert json.loads((tmp_path / "edited.json").read_text())["variants"][0]["graders"]["judge"] == 0
    # options of a live eval do not go with --offline
    refused = run_cli(["eval", str(evalset), "--offline", "--model", "m2"], cwd=tmp_path)
    assert refused.returncode == 2 and "--model does not go with it" in refused.stderr


COSTS = """\
version: 1
kind: evalset
name: qa-costs
workflow: qa.yaml
cases:
  - id: capital
    inputs: {question: What is the capital of France?}
  - id: sum
    inputs: {question: What is 2 + 2?}
graders:
  - {name: cost-ok, budget: {max_cost_usd: 0.05}}
  - {name: cost-over, budget: {max_cost_usd: 0.03}}
  - {name: calls-ok, budget: {max_calls: 2}}
  - {name: calls-over, budget: {max_calls: 1}}
  - {name: time-ok, budget: {max_seconds: 3600}}
  - {name: time-over, budget: {max_seconds: 0.4}}
"""
RUN_COST = 2 * (10 * 1000 + 5 * 2000) / 1e6  # two model calls of 10 + 5 tokens at $1000/$2000 per million


class SlowCapital(Scripted):
    """The capital question's first answer takes 0.5 s at the server: that run lasts longer."""

    def __call__(self, request: WireRequest) -> Reply:
        reply = super().__call__(request)
        if "capital" in request.last_user_text and request.assistant_turns == 0:
            reply.delay_s = 0.5
        return reply


@pytest.mark.parametrize("wire", WIRES)
def test_each_run_is_measured_and_graded_on_cost_calls_and_time(tmp_path: Path, wire: str) -> None:
    """Per run, per case and per variant: wall time, model calls, tokens and cost, in the JSON,
    JUnit and HTML reports and the table, and the budget grader's ceilings on each; offline,
    the recorded run's figures again."""
    with WireServer(SlowCapital()) as server:
        project(tmp_path, server, wire)
        evalset = write_files(tmp_path, {"costs.eval.yaml": COSTS}) / "costs.eval.yaml"
        junit, html = tmp_path / "junit.xml", tmp_path / "report.html"
        code, out, data = evaluate(evalset, wire, "--record", "--junit", str(junit), "--html", str(html))
    assert code == 0, out  # no threshold set
    variant = data["variants"][0]
    runs = {r["case"]: r for r in variant["runs"]}
    for run in runs.values():
        assert (run["steps"], run["total_tokens"], run["cost_usd"]) == (2, 30, pytest.approx(RUN_COST))
    assert runs["capital"]["duration_s"] >= 0.5  # the server held its first answer that long
    capital, total = graders_of(data, "capital"), graders_of(data, "sum")
    for graders in (capital, total):
        assert {n: g["passed"] for n, g in graders.items() if n != "time-over"} == {
            "cost-ok": True,
            "cost-over": False,
            "calls-ok": True,
            "calls-over": False,
            "time-ok": True,
        }
        assert graders["cost-over"]["detail"] == f"at most $0.03; it cost ${RUN_COST:.6f}"
        assert graders["calls-over"]["detail"] == "at most 1 model calls; 2 made"
    assert capital["time-over"]["passed"] is False
    assert re.fullmatch(r"at most 0\.4 s; it took \d+\.\d\d s", capital["time-over"]["detail"])
    case = cases(data)["capital"]
    assert (case["steps"], case["total_tokens"], case["cost_usd"]) == (2, 30, pytest.approx(RUN_COST))
    assert case["duration_s"] == runs["capital"]["duration_s"]
    assert (variant["steps"], variant["total_tokens"], variant["cost_usd"]) == (
        4,
        60,
        pytest.approx(2 * RUN_COST),
    )
    assert variant["duration_s"] == pytest.approx(sum(r["duration_s"] for r in runs.values()))
    # the table: a column each, a run's figures per case and the variant's totals
    header = next(line for line in out.splitlines() if "case" in line)
    assert all(column in header for column in ("default", "time", "calls", "tokens", "cost")), header
    row = next(line for line in out.splitlines() if line.lstrip("│ ").startswith("capital"))
    assert f"{runs['capital']['duration_s']:.1f} s" in row and " 30 " in row and f"${RUN_COST:.4f}" in row
    totals = next(line for line in out.splitlines() if line.lstrip("│ ").startswith("total"))
    assert " 4 " in totals and " 60 " in totals and f"${2 * RUN_COST:.4f}" in totals
    # JUnit: each test case's properties, and the suite's totals
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    assert (props["calls"], props["tokens"], props["cost_usd"]) == ("4", "60", f"{2 * RUN_COST:.6f}")
    for testcase in suite.findall("testcase"):
        figures = {p.get("name"): p.get("value") for p in testcase.findall("properties/property")}
        run = runs[str(testcase.get("name")).split("#")[0]]
        assert figures == {
            "seconds": f"{run['duration_s']:.3f}",
            "calls": "2",
            "tokens": "30",
            "cost_usd": f"{RUN_COST:.6f}",
        }
    page = html.read_text()
    assert "tokens <small>(a run (mean))</small>" in page and "tokens <small>(all runs)</small>" in page
    assert f"2 model call(s) · 30 tokens · ${RUN_COST:.4f}" in page
    # offline: the recording graded again, with the recorded run's time, calls, tokens and cost
    proc = run_cli(["eval", str(evalset), "--offline", "--json", "offline.json"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    offline = {
        r["case"]: r for r in json.loads((tmp_path / "offline.json").read_text())["variants"][0]["runs"]
    }
    for name, run in runs.items():
        again = offline[name]
        assert (again["duration_s"], again["steps"], again["total_tokens"]) == (
            run["duration_s"],
            run["steps"],
            run["total_tokens"],
        )
        assert again["cost_usd"] == pytest.approx(run["cost_usd"])
        assert [g["passed"] for g in again["graders"]] == [g["passed"] for g in run["graders"]]


def test_a_grader_reads_the_first_10_mb_of_an_agents_file(tmp_path: Path) -> None:
    """The agent's shell makes answer.md a sparse file of 11 MB of zeros, then the needle: a
    grader reads its first 10 MB (a sparse file can claim any size, and had been read whole),
    so the needle past them is not found, and nothing fails otherwise."""
    make = "truncate -s 11M answer.md && echo NEEDLE >> answer.md"
    shell = {"name": "execute_shell", "arguments": {"command": make}}
    script = {"answerer": [{"tool_calls": [shell]}, {"text": "written"}] * 2}
    files = {
        "qa.yaml": WORKFLOW.split("models:")[0]
        + "models:\n  s: {provider: scripted, model: s, script: script.yaml}\ndefault_model: s\n"
        + 'entry: answerer\ntask: "Question: {{ question }}"\noutput: answer.md\n',
        "agents.d/answerer.yaml": AGENT.replace("[write_file]", "[execute_shell]"),
        "script.yaml": script_manifest(script),
        "qa.eval.yaml": EVALSET.split("graders:")[0]
        + "graders:\n  - name: needle\n    output: {contains: NEEDLE}\n",
    }
    write_files(tmp_path, files)
    _, output, data = evaluate(tmp_path / "qa.eval.yaml", "openai")
    assert data, output
    assert {run["status"] for run in data["variants"][0]["runs"]} == {"completed"}, output
    needle = graders_of(data, "capital")["needle"]
    assert needle["score"] == 0 and "contains 'NEEDLE'" in needle["detail"], needle
