"""`list_runs`, `format_runs` and `show_run` on real run folders written by `flowrun` subprocesses
(a dry run of examples/research.yaml, a priced scripted run with an agent as tool, a loop
workflow) and on a hand-made crashed run (no run_end, torn last line)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cli import run_cli
from support.paths import REPO
from support.project import write_files
from support.runs import events as events_of

from flowrun.cli.views.run_views import show_run
from flowrun.cli.views.runs_table import format_duration, format_runs
from flowrun.errors import RunError
from flowrun.runtime.durable.runs_index import RunEntry, read_run
from flowrun.runtime.durable.runs_index import list_runs as index_list

WORKFLOW = """\
version: 1
kind: workflow
name: priced
inputs:
  question: {description: q}
models:
  s: {provider: scripted, model: s, script: script.yaml, price: {input: 1.0, output: 2.0}}
default_model: s
entry: boss
output: out.md
"""

NAP = """\
version: 1
kind: tool
name: nap
description: Sleep for a while.
parameters:
  type: object
  properties: {seconds: {type: number}}
  required: [seconds]
implementation:
  command: ["sleep", "{{ seconds }}"]
"""

LOOP_WORKFLOW = """\
version: 1
kind: workflow
name: looped
inputs:
  question: {description: q}
default_model: test:any
steps:
  - loop:
      max_iterations: 2
      steps:
        - agent: boss
"""


def agent_yaml(name: str, tools: list[str], **extra: Any) -> str:
    spec = {"version": 1, "kind": "agent", "name": name, "description": f"{name} role"}
    return yaml.safe_dump({**spec, "prompt": f"You are {name}.", "tools": tools, **extra})


def check(proc: Any) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Traceback" not in out


def into(runs_dir: Path, run_id: str) -> list[str]:
    return ["--runs-dir", str(runs_dir), "--run-id", run_id]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One runs folder holding: research (dry run), priced (scripted, costed), looped, crashed."""
    base = tmp_path_factory.mktemp("inspect")
    runs_dir = base / "runs"
    check(
        run_cli(
            [
                *["examples/research.yaml", "--question", "what is x", "--dry-run"],
                # edit_file's dry-run call names a line the file lacks, so the tree has an error
                *["--set", "tools.edit_file.dry_run.start_line=99", *into(runs_dir, "research")],
            ],
            cwd=REPO,
        )
    )
    project = base / "priced"
    script = {
        "version": 1,
        "kind": "script",
        "agents": {
            "boss": [
                {"tool_calls": [{"name": "helper", "arguments": {"task": "nap a bit"}}]},
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "out.md", "content": "ok"}}]},
                {"text": "done"},
            ],
            "helper": [
                {"tool_calls": [{"name": "nap", "arguments": {"seconds": 0.3}}]},
                {"text": "rested"},
            ],
        },
    }
    write_files(
        project,
        {
            "wf.yaml": WORKFLOW,
            "tools.d/nap.yaml": NAP,
            "agents.d/boss.yaml": agent_yaml("boss", ["helper", "write_file"]),
            "agents.d/helper.yaml": agent_yaml("helper", ["nap"]),
            "script.yaml": yaml.safe_dump(script),
        },
    )
    check(run_cli(["wf.yaml", "--question", "q", *into(runs_dir, "priced")], cwd=project))
    looped = base / "looped"
    write_files(
        looped, {"wf.yaml": LOOP_WORKFLOW, "agents.d/boss.yaml": agent_yaml("boss", ["list_directory"])}
    )
    check(
        run_cli(
            ["wf.yaml", "--question", "q", "--dry-run", *into(runs_dir, "looped")],
            cwd=looped,
        )
    )
    make_crashed(runs_dir / "research", runs_dir / "crashed")
    (runs_dir / "not-a-run").mkdir()  # a stray folder is skipped
    return runs_dir


def make_crashed(source: Path, target: Path) -> None:
    """The research run cut off while the searcher waits on visit_url, 1000 s earlier, with a
    half-written last line and run.json still saying "running"."""
    target.mkdir()
    events = [json.loads(line) for line in (source / "events.jsonl").read_text().splitlines()]
    cut = next(i for i, e in enumerate(events) if e["type"] == "tool_call" and e["tool"] == "visit_url")
    lines = [json.dumps({**e, "t": e["t"] - 1000}) for e in events[: cut + 1]]
    torn = json.dumps(events[cut + 1])[:40]
    (target / "events.jsonl").write_text("\n".join(lines) + "\n" + torn, encoding="utf-8")
    meta = json.loads((source / "run.json").read_text())
    meta.update(run_id="crashed", status="running")
    (target / "run.json").write_text(json.dumps(meta), encoding="utf-8")


# ------------------------------------------------------------------ list_runs / format_runs


def list_runs(runs: Path) -> list[RunEntry]:
    return index_list(runs).runs


def read_run_row(run_dir: Path) -> RunEntry:
    found = read_run(run_dir)
    assert found is not None
    return found


def test_list_runs_reads_every_run_folder(runs: Path) -> None:
    rows = {row.id: row for row in list_runs(runs)}
    assert set(rows) == {"research", "priced", "looped", "crashed"}
    research = rows["research"]
    events = events_of(runs / "research")
    usage = json.loads((runs / "research" / "usage.json").read_text())
    assert research.status == "completed" and research.workflow == "research" and research.dry_run
    assert research.steps == sum(e["type"] == "model_response" for e in events) == 32
    assert research.total_tokens == usage["total_tokens"]
    assert research.cost_usd is None  # the test model has no prices
    assert research.duration_s == pytest.approx(events[-1]["t"] - events[0]["t"])
    priced = rows["priced"]
    assert priced.cost_usd is not None and priced.cost_usd > 0
    expected = json.loads((runs / "priced" / "usage.json").read_text())["total_cost_usd"]
    assert priced.cost_usd == pytest.approx(expected)
    assert priced.steps == 5 and not priced.dry_run
    assert priced.duration_s is not None and priced.duration_s >= 0.3  # it napped 0.3 s


def test_crashed_run_is_interrupted(runs: Path) -> None:
    row = read_run_row(runs / "crashed")
    assert row.status == "interrupted"
    assert row.cost_usd is None  # no run_end, no usage.json
    assert 0 < row.steps < 32


def test_status_comes_from_run_json_when_the_run_ended(tmp_path: Path, runs: Path) -> None:
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    (run_dir / "events.jsonl").write_text((runs / "priced" / "events.jsonl").read_text())
    (run_dir / "run.json").write_text(json.dumps({"status": "budget_exceeded", "workflow": "w"}))
    assert read_run_row(run_dir).status == "budget_exceeded"
    (run_dir / "run.json").unlink()  # no run.json: the run_end event decides
    row = read_run_row(run_dir)
    assert row.status == "completed" and row.workflow == "priced" and row.id == "r"


def test_newest_first(runs: Path) -> None:
    rows = list_runs(runs)
    started = [row.started for row in rows]
    assert started == sorted(started, reverse=True)  # type: ignore[type-var]
    assert rows[-1].id == "crashed"  # its events are 1000 s older
    assert rows[0].id == "looped"  # the last one written by the fixture


def test_format_runs_is_an_aligned_plain_table(runs: Path) -> None:
    text = format_runs(list_runs(runs), color=False)
    assert "\x1b[" not in text
    lines = text.splitlines()
    header, body = lines[0], lines[1:]
    columns = ["run", "workflow", "status", "started", "steps", "tokens", "cost", "duration", "inputs"]
    assert header.split() == columns
    assert [line.split()[0] for line in body] == ["looped", "priced", "research", "crashed"]
    research = next(line for line in body if line.startswith("research "))
    assert "research (dry run)" in research and "completed" in research
    tokens = json.loads((runs / "research" / "usage.json").read_text())["total_tokens"]
    assert f"{tokens:,}" in research
    # columns line up: each status starts where the header's does
    column = header.index("status")
    assert all(line[column:].split()[0] in {"completed", "interrupted"} for line in body)
    priced = next(line for line in body if line.startswith("priced "))
    assert re.search(r"\$0\.\d{4}", priced)
    assert "interrupted" in next(line for line in body if line.startswith("crashed "))


def test_format_runs_colours_only_on_request(runs: Path) -> None:
    assert "\x1b[" in format_runs(list_runs(runs), color=True)
    assert format_runs([]) == "no runs yet"


def test_list_runs_on_a_missing_folder_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(RunError) as info:
        list_runs(tmp_path / "nope")
    assert info.value.hint and "--runs-dir" in info.value.hint
    assert list_runs(tmp_path) == []


def test_format_duration() -> None:
    assert format_duration(None) == "-"
    assert format_duration(0.0304) == "30 ms"
    assert format_duration(2.34) == "2.3 s"
    assert format_duration(125) == "2m 05s"
    assert format_duration(3 * 3600 + 120) == "3h 02m"


# ------------------------------------------------------------------ show_run


def tree_lines(text: str) -> list[str]:
    return text.split("\n\n")[0].splitlines()


def indent(line: str) -> int:
    return len(line) - len(line.lstrip("│├└─ "))


def test_show_research_nests_sub_agents_under_their_calls(runs: Path) -> None:
    text = show_run(runs / "research", color=False)
    assert "\x1b[" not in text
    lines = tree_lines(text)
    assert lines[0] == "run research"
    orchestrator = next(i for i, line in enumerate(lines) if "orchestrator (test) completed" in line)
    call = next(i for i, line in enumerate(lines) if "✓ searcher task=" in line)
    agent = next(i for i, line in enumerate(lines) if "searcher (test) completed" in line)
    visit = next(i for i, line in enumerate(lines) if "visit_url" in line)
    assert orchestrator < call < agent < visit
    assert indent(lines[orchestrator]) < indent(lines[call]) < indent(lines[agent]) < indent(lines[visit])
    assert lines[visit].split("visit_url")[0].rstrip().endswith("~")  # partial: the page was cut
    edit = next(line for line in lines if "✗ edit_file" in line)
    assert "INVALID_PARAM" in edit
    # per-agent token counts match the model responses of that agent
    searcher_tokens = sum(
        sum(e["response"]["usage"].values())
        for e in events_of(runs / "research")
        if e["type"] == "model_response" and e["agent"] == "searcher"
    )
    assert f"7 step(s) · {searcher_tokens:,} tokens" in lines[agent]
    for name in ("analyzer", "writer"):
        assert any(f"{name} (test) completed" in line for line in lines)


def test_show_run_summary(runs: Path) -> None:
    summary = show_run(runs / "research", color=False).split("\n\n", 1)[1]
    usage = json.loads((runs / "research" / "usage.json").read_text())
    assert "status: completed" in summary
    assert "workflow: research (" in summary and "dry run" in summary
    assert "inputs: question=what is x" in summary
    assert f"model steps: 32 · {usage['total_tokens']:,} tokens" in summary
    calls = sum(e["type"] == "tool_call" for e in events_of(runs / "research"))
    assert f"tool calls: {calls} (" in summary
    assert "output: report.md" in summary and "not written" not in summary


def test_show_run_times_tool_calls(runs: Path) -> None:
    text = show_run(runs / "priced", color=False)
    nap = next(line for line in tree_lines(text) if "nap seconds=0.3" in line)
    match = re.search(r"· (\d+) ms", nap)
    assert match, nap
    assert int(match.group(1)) >= 290  # the command slept 0.3 s
    assert re.search(r"cost \$0\.\d{4}", text)
    lines = tree_lines(text)
    helper_call = next(i for i, line in enumerate(lines) if "✓ helper task=nap a bit" in line)
    assert "helper (s) completed · 2 step(s)" in lines[helper_call + 1]


def test_show_run_groups_loop_iterations(runs: Path) -> None:
    lines = tree_lines(show_run(runs / "looped", color=False))
    iterations = [i for i, line in enumerate(lines) if line.lstrip("│├└─ ").startswith("iteration ")]
    assert len(iterations) == 2
    assert "iteration 1 of loop0" in lines[iterations[0]] and "iteration 2 of loop0" in lines[iterations[1]]
    boss = [i for i, line in enumerate(lines) if "boss (test) completed" in line]
    assert len(boss) == 2
    assert iterations[0] < boss[0] < iterations[1] < boss[1]
    assert indent(lines[boss[0]]) > indent(lines[iterations[0]])


def test_show_crashed_run(runs: Path) -> None:
    text = show_run(runs / "crashed", color=False)
    lines = tree_lines(text)
    visit = next(line for line in lines if "visit_url" in line)
    assert "no result" in visit
    assert any("searcher (test) interrupted" in line for line in lines)
    assert any("orchestrator (test) interrupted" in line for line in lines)
    assert "status: interrupted (no end recorded: killed or crashed)" in text


def test_show_run_colours_only_on_request(runs: Path) -> None:
    assert "\x1b[" in show_run(runs / "research", color=True)


def test_show_run_user_errors(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="is not a folder") as info:
        show_run(tmp_path / "missing")
    assert info.value.hint and "flowrun runs" in info.value.hint
    with pytest.raises(RunError, match=r"no events\.jsonl"):
        show_run(tmp_path)
    (tmp_path / "events.jsonl").write_text('{"seq": 1, "t": 1.0, "ty')  # only a torn line
    with pytest.raises(RunError, match="holds no events") as info:
        show_run(tmp_path)
    assert info.value.hint and "flowrun.log" in info.value.hint
