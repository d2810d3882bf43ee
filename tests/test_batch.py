"""`flowrun batch` and `flowrun.run_batch` with the local backend, against the scripted wire
server through the real `openai` SDK: a 20-item batch, CSV items, mistakes in the items, a batch
killed half way and started again, per-item and total budgets, --retry-failed, and a shared rate
limit measured by the server's own request timestamps."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.cli import flowrun_cmd, popen_cli, run_cli
from support.env import clean_env
from support.procs import DEADLINE_S, wait_for
from support.project import write_files
from support.runs import folders, live_events
from support.wire_server import Reply, Responder, ToolCallSpec, WireRequest, WireServer

import flowrun
from flowrun.runtime.models import rate_limits
from flowrun.runtime.models.rate_limits import Limit, LocalBook

PRICE = "{input: 1000, output: 2000}"  # USD per million: a call of 10 + 5 tokens costs $0.02
CALL_COST = 0.02
WORKFLOW = """\
version: 1
kind: workflow
name: qa
inputs:
  question: {description: the question}
  level: {type: integer, default: 1}
models:
  m:
    provider: openai-compatible
    base_url: BASE_URL
    model: m
    stream: false
    price: PRICE
    RATE_LIMIT
default_model: m
entry: answerer
task: "Question: {{ question }} (level {{ level }})"
output: answer.md
"""
AGENT = """\
version: 1
kind: agent
name: answerer
prompt: You answer questions.
tools: [write_file]
"""


def answerer(delay_s: float = 0.0, fail_on: str | None = None) -> Any:
    """Writes `answer.md` naming the question, then answers; each reply after `delay_s`. A
    question containing `fail_on` gets HTTP 400 (a failed item)."""

    def respond(request: WireRequest) -> Reply:
        question = re.search(r"Question: (.*) \(level", request.last_user_text)
        text = question.group(1) if question else "?"
        if fail_on is not None and fail_on in text:
            return Reply(
                status=400, error_body={"error": {"message": "this question is refused", "type": "x"}}
            )
        if request.assistant_turns == 0:
            args = {"path": "answer.md", "content": f"Answer to: {text}\n"}
            return Reply(tool_calls=[ToolCallSpec("write_file", args)], delay_s=delay_s)
        return Reply(text=f"answered {text}", delay_s=delay_s)

    return respond


class Held:
    """Answers like `inner`, but the requests of the questions `held` picks wait until
    `release()`: those items are running, mid-call, while the test acts, and the batch cannot
    end before it has. (A held request is on the server's `requests` as it arrives.)"""

    def __init__(self, inner: Responder, held: Callable[[str], bool]) -> None:
        self.inner = inner
        self.held = held
        self.released = threading.Event()

    def __call__(self, request: WireRequest) -> Reply:
        if self.held(question_of(request)):
            self.released.wait(DEADLINE_S)  # a failing test that never releases frees it then
        return self.inner(request)

    def release(self) -> None:
        self.released.set()


def held_on_the_wire(server: WireServer, held: Callable[[str], bool]) -> set[str]:
    """The held questions whose request the server has received."""
    return {q for q in map(question_of, server.requests) if held(q)}


def make_project(folder: Path, server: WireServer, rate_limit: str = "") -> Path:
    text = WORKFLOW.replace("BASE_URL", server.openai_base_url).replace("PRICE", PRICE)
    text = text.replace("    RATE_LIMIT\n", f"    rate_limit: {rate_limit}\n" if rate_limit else "")
    return write_files(folder, {"qa.yaml": text, "agents.d/answerer.yaml": AGENT}) / "qa.yaml"


def write_items(path: Path, questions: list[str], **extra: Any) -> Path:
    path.write_text("".join(json.dumps({"question": q, **extra}) + "\n" for q in questions))
    return path


def results(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def ended_items(out: Path) -> int:
    """The lines results.jsonl has now (one per item that ended, while the batch runs)."""
    path = out / "results.jsonl"
    return path.read_text().count("\n") if path.exists() else 0


def question_of(request: WireRequest) -> str:
    found = re.search(r"Question: (.*) \(level", request.last_user_text)
    return found.group(1) if found else ""


@pytest.fixture
def server() -> Any:
    with WireServer(answerer()) as srv:
        yield srv


# ---------------------------------------------------------------- a batch


def test_twenty_items_through_the_cli(server: WireServer, tmp_path: Path) -> None:
    workflow = make_project(tmp_path / "p", server)
    questions = [f"question {i}" for i in range(20)]
    items = write_items(tmp_path / "items.jsonl", questions)
    out = tmp_path / "out"
    proc = run_cli(["batch", str(workflow), str(items), "--out", str(out), "-c", "6"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "20 items: 20 completed, 0 failed (20 run now)" in proc.stdout
    assert "[20/20]" in proc.stderr  # one line per item when stderr is not a terminal
    lines = results(out)
    assert len(lines) == 20 and len({r["id"] for r in lines}) == 20
    for question, line in zip(questions, lines, strict=True):  # in the order of the items file
        assert line["status"] == "completed" and line["error"] is None
        assert line["input_tokens"] == 20 and line["output_tokens"] == 10 and line["total_tokens"] == 30
        assert line["cost_usd"] == pytest.approx(2 * CALL_COST) and line["duration_s"] > 0
        run_dir = out / line["run_dir"]
        assert line["run_dir"] == f"runs/{line['id']}"
        assert (out / line["output"]).read_text() == f"Answer to: {question}\n"
        meta = json.loads((run_dir / "run.json").read_text())
        assert meta["status"] == "completed" and meta["inputs"] == {"question": question, "level": 1}
    assert len(server.requests) == 40
    assert "cost $0.8000" in proc.stdout
    # the same command again: everything is done already
    again = run_cli(["batch", str(workflow), str(items), "--out", str(out)], cwd=tmp_path)
    assert again.returncode == 0 and "(0 run now)" in again.stdout
    assert len(server.requests) == 40 and results(out) == lines


def test_csv_items_ids_and_defaults(server: WireServer, tmp_path: Path) -> None:
    workflow = make_project(tmp_path / "p", server)
    items = tmp_path / "items.csv"
    items.write_text('id,question,level\nfirst,"What, exactly?",3\nsecond,Why?,\n')
    summary = asyncio.run(flowrun.run_batch(workflow, items, out=tmp_path / "out", concurrency=2))
    assert summary.ok and summary.completed == 2 and summary.exit_code == 0
    lines = results(tmp_path / "out")
    assert [r["id"] for r in lines] == ["first", "second"]
    first = json.loads((tmp_path / "out" / "runs" / "first" / "run.json").read_text())
    second = json.loads((tmp_path / "out" / "runs" / "second" / "run.json").read_text())
    assert first["inputs"] == {"question": "What, exactly?", "level": 3}
    assert second["inputs"] == {"question": "Why?", "level": 1}  # an empty cell: the default


def test_json_items_a_list_of_objects_through_the_cli(server: WireServer, tmp_path: Path) -> None:
    """A `.json` items file holding a list of objects (what most tools export) runs one item per
    object; a mistake in it is reported at the line its object starts on; one object is one item
    and JSON lines named .json are read as such. It had been read as JSON lines: "got list"."""
    workflow = make_project(tmp_path / "p", server)
    items = tmp_path / "items.json"
    items.write_text('\ufeff[\n  {"id": "first", "question": "a"},\n  {"question": "b", "level": 2}\n]\n')
    proc = run_cli(["batch", str(workflow), str(items), "--out", str(tmp_path / "out"), "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = results(tmp_path / "out")
    assert [r["line"] for r in lines] == [2, 3] and lines[0]["id"] == "first"
    items.write_text('[\n  {"question": "a"},\n  "b",\n  {"question": "c", "level": "high"}\n]\n')
    proc = run_cli(["batch", str(workflow), str(items), "--out", str(tmp_path / "bad")], cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "items.json:3: an item is a JSON object of inputs, got a string" in proc.stderr, proc.stderr
    assert "items.json:4: input 'level' expects integer" in proc.stderr and "items.json:2" not in proc.stderr
    for text, count in (('{"question": "solo"}', 1), ('{"question": "x"}\n{"question": "y"}\n', 2)):
        items.write_text(text)
        summary = asyncio.run(flowrun.run_batch(workflow, items, out=tmp_path / f"out{count}"))
        assert summary.ok and summary.completed == count


def test_item_ids_are_stable_when_items_are_added_and_reordered(server: WireServer, tmp_path: Path) -> None:
    workflow = make_project(tmp_path / "p", server)
    out = tmp_path / "out"
    items = write_items(tmp_path / "items.jsonl", ["a", "b", "a"])
    asyncio.run(flowrun.run_batch(workflow, items, out=out))
    first = {r["id"] for r in results(out)}
    assert len(first) == 3  # the repeated question gets an id of its own
    write_items(items, ["c", "a", "b", "a"])
    summary = asyncio.run(flowrun.run_batch(workflow, items, out=out))
    assert summary.ran == 1 and summary.completed == 4  # only "c" ran
    assert first < {r["id"] for r in results(out)}
    assert len(server.requests) == 8


def test_mistakes_in_the_items_are_reported_by_line_and_nothing_runs(
    server: WireServer, tmp_path: Path
) -> None:
    workflow = make_project(tmp_path / "p", server)
    items = tmp_path / "items.jsonl"
    items.write_text(
        '{"question": "fine"}\n'
        '{"quesiton": "typo"}\n'
        "not json\n"
        '{"question": "x", "level": "high"}\n'
        "[1, 2]\n"
        '{"level": 2}\n'
        '{"id": "a/b", "question": "bad id"}\n'
    )
    out = tmp_path / "out"
    proc = run_cli(["batch", str(workflow), str(items), "--out", str(out)], cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    for line in (2, 3, 4, 5, 6, 7):
        assert f"items.jsonl:{line}:" in proc.stderr
    assert "items.jsonl:1:" not in proc.stderr
    assert "unknown input 'quesiton'" in proc.stderr and "input 'level' expects integer" in proc.stderr
    assert "items.jsonl:6: missing input 'question'" in proc.stderr
    assert "--" not in proc.stderr.split("nothing was run")[1]  # an item's input is not a command's flag
    assert not server.requests and not out.exists()
    # text that is not UTF-8 (a lone surrogate escape) is named by the item's line and input
    items.write_text('{"question": "caf\\udce9"}\n')
    proc = run_cli(["batch", str(workflow), str(items), "--out", str(out)], cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "items.jsonl:1: input 'question' is not valid UTF-8: byte 0xe9 at character 4" in proc.stderr
    assert "@FILE" not in proc.stderr and not out.exists()
    for args, message in (
        (["-c", "0"], "--concurrency must be at least 1"),
        (["--max-cost-usd", "-1"], "--max-cost-usd must be more than 0"),
        (["--dry-run", "--max-cost-usd", "1"], "nothing to count in a dry run"),
    ):
        write_items(items, ["fine"])
        proc = run_cli(["batch", str(workflow), str(items), "--out", str(out), *args], cwd=tmp_path)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    proc = run_cli(["batch", str(workflow), str(tmp_path / "missing.jsonl")], cwd=tmp_path)
    assert proc.returncode == 2 and "cannot read the items file" in proc.stderr


def test_a_budget_over_an_unpriced_model_warns_and_runs(tmp_path: Path) -> None:
    """A budget counts what it can price: a model with no price that the table does not know is
    named in a warning, and the batch runs (here its item fails: nothing listens on the port)."""
    text = WORKFLOW.replace("BASE_URL", "http://127.0.0.1:9/v1").replace("    price: PRICE\n", "")
    files = {"qa.yaml": text.replace("    RATE_LIMIT\n", ""), "agents.d/answerer.yaml": AGENT}
    workflow = write_files(tmp_path, files) / "qa.yaml"
    items = write_items(tmp_path / "items.jsonl", ["q"])
    proc = run_cli(["batch", str(workflow), str(items), "--max-cost-usd-per-item", "1"], cwd=tmp_path)
    assert "model 'm' (agent 'answerer') has no price" in proc.stderr
    assert "price: {input: ..., output: ...}" in proc.stderr
    assert proc.returncode == 1 and "some items did not complete" in proc.stdout + proc.stderr


def test_a_failed_item_is_kept_and_retried_only_when_asked(tmp_path: Path) -> None:
    with WireServer(answerer(fail_on="bad")) as server:
        workflow = make_project(tmp_path / "p", server)
        items = write_items(tmp_path / "items.jsonl", ["good 1", "bad one", "good 2"])
        out = tmp_path / "out"
        proc = run_cli(["batch", str(workflow), str(items), "--out", str(out)], cwd=tmp_path)
        assert proc.returncode == 1 and "2 completed, 1 failed" in proc.stdout
        bad = next(r for r in results(out) if r["status"] != "completed")
        assert bad["status"] == "failed" and "this question is refused" in bad["error"]
        served = len(server.requests)
        again = run_cli(["batch", str(workflow), str(items), "--out", str(out)], cwd=tmp_path)
        assert again.returncode == 1 and "(0 run now)" in again.stdout and len(server.requests) == served
    with WireServer(answerer()) as fixed:  # the model now answers it
        workflow = make_project(tmp_path / "p", fixed)
        proc = run_cli(
            ["batch", str(workflow), str(items), "--out", str(out), "--retry-failed"], cwd=tmp_path
        )
        assert proc.returncode == 0 and "3 completed, 0 failed (1 run now)" in proc.stdout
        assert [question_of(r) for r in fixed.requests] == ["bad one", "bad one"]


# ---------------------------------------------------------------- killed half way


def test_a_killed_batch_resumes_without_repeating_a_recorded_request(tmp_path: Path) -> None:
    questions = [f"q{i}" for i in range(12)]
    held = Held(answerer(delay_s=0.3), lambda q: q not in questions[:5])  # the rest wait mid-call
    with WireServer(held) as server:
        workflow = make_project(tmp_path / "p", server)
        items = write_items(tmp_path / "items.jsonl", questions)
        out = tmp_path / "out"
        env = clean_env()
        args = ["batch", str(workflow), str(items), "--out", str(out), "-c", "3", "-q"]
        proc = subprocess.Popen([*flowrun_cmd(), *args], cwd=tmp_path, env=env)
        try:  # five items ended, the next three are running (asking the model) when it dies
            assert wait_for(
                lambda: (
                    (ended_items(out) == 5 and len(held_on_the_wire(server, held.held)) == 3)
                    or proc.poll() is not None
                )
            )
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=DEADLINE_S)
        finally:
            held.release()
        finished = {r["id"]: r for r in results(out)}
        assert len(finished) == 5
        # what each run folder had recorded when the process died: (question, model call) pairs
        recorded: set[tuple[str, int]] = set()
        untouched: dict[str, bytes] = {}
        for run_dir in folders(out / "runs"):
            events = live_events(run_dir)
            start = next((e for e in events if e["type"] == "run_start"), None)
            if start is None:
                continue  # killed before its first event: nothing was recorded
            question = start["inputs"]["question"]
            recorded |= {(question, e["step"]) for e in events if e["type"] == "model_response"}
            if run_dir.name in finished:
                untouched[run_dir.name] = (run_dir / "events.jsonl").read_bytes()
        before = len(server.requests)
        again = run_cli(args, cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert "12 items: 12 completed, 0 failed" in again.stdout
        later = server.requests[before:]
    for request in later:  # model call n of a run is its n-th request (assistant turns + 1)
        assert (question_of(request), request.assistant_turns + 1) not in recorded
    done_before = {
        json.loads((out / "runs" / i / "run.json").read_text())["inputs"]["question"] for i in finished
    }
    assert not done_before & {question_of(r) for r in later}  # no completed item ran again
    for item_id, events in untouched.items():
        assert (out / "runs" / item_id / "events.jsonl").read_bytes() == events
    lines = results(out)
    assert len(lines) == 12 and all(r["status"] == "completed" for r in lines)
    for line in lines:
        assert (out / line["output"]).read_text().startswith("Answer to: q")


def test_the_same_batch_started_twice_at_once_is_refused_and_the_first_completes(tmp_path: Path) -> None:
    """A batch running into its folder (the default one, two items mid-call) and the same
    command started again: the second is refused in one line, exit 2, and touches nothing;
    the first completes every item; run again afterwards, it resumes (nothing to do)."""
    questions = [f"q{i}" for i in range(6)]
    held = Held(answerer(), lambda q: True)  # every request waits until released
    with WireServer(held) as server:
        workflow = make_project(tmp_path / "p", server)
        items = write_items(tmp_path / "items.jsonl", questions)
        args = ["batch", str(workflow), str(items), "-c", "2", "-q"]
        first = popen_cli(args, tmp_path)
        try:
            assert wait_for(lambda: len(held_on_the_wire(server, held.held)) == 2 or first.poll() is not None)
            assert first.poll() is None, first.communicate()
            (folder,) = (tmp_path / "batches").iterdir()
            before = sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
            second = run_cli(args, cwd=tmp_path)
            after = sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
        finally:
            held.release()
        _, err = first.communicate(timeout=DEADLINE_S)
        again = run_cli(args, cwd=tmp_path)
    assert second.returncode == 2, second.stdout + second.stderr
    assert f"batch folder {folder.relative_to(tmp_path)} is in use by pid {first.pid}" in second.stderr, (
        second.stderr
    )
    assert "Traceback" not in second.stderr and before == after
    assert first.returncode == 0, err
    lines = results(folder)
    assert len(lines) == 6 and all(r["status"] == "completed" for r in lines), lines
    assert again.returncode == 0 and "6 items: 6 completed" in again.stdout, again.stdout + again.stderr


def test_an_item_stopped_before_its_run_began_is_not_started(tmp_path: Path) -> None:
    """run_batch cancelled (as Ctrl-C stops it) the moment an item is handed out: that item's
    run had not begun, so it gets no line in results.jsonl (no run_dir without a run.json) and
    counts as not started, like the items never handed out; the item that was running ends
    `cancelled`, as its run.json says. The next run starts the first afresh and resumes the
    second."""
    inner = answerer()
    b_asked, release = threading.Event(), threading.Event()

    def respond(request: WireRequest) -> Reply:
        question = question_of(request)
        if question == "b":
            b_asked.set()
            release.wait(DEADLINE_S)  # b stays mid-call while the batch is stopped
        elif question == "a":
            b_asked.wait(DEADLINE_S)  # a ends once b's run is under way
        return inner(request)

    with WireServer(respond) as server:
        workflow = make_project(tmp_path / "p", server)
        items = write_items(tmp_path / "items.jsonl", ["a", "b", "c", "d"])
        out = tmp_path / "out"

        async def stopped_as_a_ends() -> None:
            batch = asyncio.current_task()
            assert batch is not None

            def on_progress(progress: flowrun.BatchProgress) -> None:
                if progress.last is not None and progress.last.line == 1:  # a ended: c is next
                    batch.cancel()

            await flowrun.run_batch(workflow, items, out=out, concurrency=2, on_progress=on_progress)

        try:
            with pytest.raises(asyncio.CancelledError):
                asyncio.run(stopped_as_a_ends())
        finally:
            release.set()
        lines = {r["line"]: r for r in results(out)}
        assert {n: r["status"] for n, r in lines.items()} == {1: "completed", 2: "cancelled"}, lines
        for line in lines.values():  # every line's run folder holds that run, ended as it says
            assert json.loads((out / line["run_dir"] / "run.json").read_text())["status"] == line["status"]
        begun = {p.name for p in (out / "runs").iterdir() if (p / "run.json").exists()}
        assert begun == {lines[1]["id"], lines[2]["id"]}  # c's run never began, d was not handed out
        assert json.loads((out / "batch.json").read_text())["status"] == "cancelled"
        assert sorted(map(question_of, server.requests)) == ["a", "a", "b"]
        summary = asyncio.run(flowrun.run_batch(workflow, items, out=out, concurrency=2))
    assert summary.ok and summary.completed == 4 and summary.ran == 3, summary
    for line in results(out):
        kinds = [e["type"] for e in live_events(out / line["run_dir"])]
        assert kinds.count("run_start") == 1
        assert ("run_resumed" in kinds) == (line["line"] == 2)  # b resumed; c and d started afresh


# ---------------------------------------------------------------- budgets


def test_per_item_budget_stops_each_item(server: WireServer, tmp_path: Path) -> None:
    workflow = make_project(tmp_path / "p", server)
    items = write_items(tmp_path / "items.jsonl", ["a", "b", "c"])
    out = tmp_path / "out"
    proc = run_cli(
        ["batch", str(workflow), str(items), "--out", str(out), "--max-cost-usd-per-item", "0.015"],
        cwd=tmp_path,
    )
    assert proc.returncode == 1 and "0 completed, 3 failed" in proc.stdout
    for line in results(out):
        assert line["status"] == "budget_exceeded" and "max_cost_usd" in line["error"]
        assert line["cost_usd"] == pytest.approx(CALL_COST)  # the first call ran, the second did not
    assert len(server.requests) == 3


def test_total_budget_stops_the_batch_and_a_higher_one_resumes_it(server: WireServer, tmp_path: Path) -> None:
    workflow = make_project(tmp_path / "p", server)
    items = write_items(tmp_path / "items.jsonl", [f"q{i}" for i in range(6)])
    out = tmp_path / "out"
    proc = run_cli(
        ["batch", str(workflow), str(items), "--out", str(out), "-c", "1", "--max-cost-usd", "0.1"],
        cwd=tmp_path,
    )
    assert proc.returncode == 4, proc.stderr
    assert "2 completed, 0 failed, 1 stopped, 3 not started" in proc.stdout
    assert "max_cost_usd ($0.1) was reached" in proc.stderr
    stopped = next(r for r in results(out) if r["status"] == "cancelled")
    meta = json.loads((out / stopped["run_dir"] / "run.json").read_text())
    assert meta["status"] == "cancelled"
    assert len(server.requests) == 5  # 2 items x 2 calls, then the third item's first call
    before = len(server.requests)
    again = run_cli(
        ["batch", str(workflow), str(items), "--out", str(out), "--max-cost-usd", "1"], cwd=tmp_path
    )
    assert again.returncode == 0 and "6 items: 6 completed" in again.stdout
    assert "cost $0.2400" in again.stdout
    resumed = [r for r in server.requests[before:] if question_of(r) == meta["inputs"]["question"]]
    assert [r.assistant_turns for r in resumed] == [1]  # its recorded first call was not asked again
    assert len(server.requests) == 12


# ---------------------------------------------------------------- a shared rate limit


def burst_ok(times: list[float], per_minute: int, jitter_s: float = 0.5) -> bool:
    """At most burst + elapsed / interval requests started in any window, give or take
    `jitter_s` between a call's turn and when it was seen (a busy machine, a first connection)."""
    interval = 60 / per_minute
    burst = max(1.0, per_minute / 60)
    times = sorted(times)
    return all(
        (j - i + 1) <= burst + (times[j] - times[i] + jitter_s) / interval
        for i in range(len(times))
        for j in range(i + 1, len(times))
    )


class BookedStarts(LocalBook):
    """The rate-limit book, noting the start time it gives each call (time.monotonic()): the
    limit is checked on these exactly, whatever a busy machine adds before a call reaches the
    server, and the server's clock shows that no call went out before its turn."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: list[float] = []

    def start_at(self, limit: Limit, tokens: int, now: float) -> float:
        start = super().start_at(limit, tokens, now)
        self.starts.append(start)
        return start


def waited_their_turn(arrivals: list[float], starts: list[float]) -> bool:
    """Every call took a start time, and none reached the server before one was due: the k-th
    request the server received came no earlier than the k-th start the book gave out."""
    return len(arrivals) == len(starts) and all(
        a >= s for a, s in zip(sorted(arrivals), sorted(starts), strict=True)
    )


EXACT = 1e-6  # float rounding only: the book's own start times


def test_a_rate_limit_is_shared_by_all_runs_of_a_batch(tmp_path: Path) -> None:
    book = BookedStarts()
    rate_limits.use_book(book)
    try:
        with WireServer(answerer()) as server:
            workflow = make_project(tmp_path / "p", server, rate_limit="{requests_per_minute: 120}")
            items = write_items(tmp_path / "items.jsonl", [f"q{i}" for i in range(4)])
            summary = asyncio.run(flowrun.run_batch(workflow, items, out=tmp_path / "out", concurrency=4))
            assert summary.ok
            times = [r.received for r in server.requests]
    finally:
        rate_limits.use_book(LocalBook())
    assert len(times) == 8
    starts = book.starts
    shown = [round(s - min(starts), 3) for s in sorted(starts)]
    assert burst_ok(starts, 120, jitter_s=EXACT), shown  # 2 at once, then one every 0.5 s
    assert max(starts) - min(starts) >= (8 - 2) * 0.5 - EXACT, shown
    assert waited_their_turn(times, starts)


def test_without_a_rate_limit_the_same_batch_bursts(tmp_path: Path) -> None:
    """The check above can fail: the same batch without `rate_limit` breaks it (as the
    server saw the calls, which can only have come later than they were sent)."""
    with WireServer(answerer(delay_s=0.05)) as server:
        workflow = make_project(tmp_path / "p", server)
        items = write_items(tmp_path / "items.jsonl", [f"q{i}" for i in range(6)])
        asyncio.run(flowrun.run_batch(workflow, items, out=tmp_path / "out", concurrency=6))
        times = [r.received for r in server.requests]
    assert not burst_ok(times, 120, jitter_s=EXACT)


def tokens_ok(times: list[float], per_call: int, per_minute: int, slack_calls: int = 1) -> bool:
    """At most a second's worth plus what the window refills, in tokens, in any window."""
    rate = per_minute / 60
    times = sorted(times)
    return all(
        (j - i + 1 - slack_calls) * per_call <= rate + (times[j] - times[i]) * rate
        for i in range(len(times))
        for j in range(i + 1, len(times))
    )


@pytest.mark.parametrize("limited", [True, False])
def test_a_token_rate_limit_spaces_the_calls(tmp_path: Path, limited: bool) -> None:
    """tokens_per_minute 24,000 = 400 a second; each call uses 200 (max_tokens 100, so it reserves
    a little more before it goes). Without the limit the same six calls arrive together."""
    book = BookedStarts()
    rate_limits.use_book(book)
    try:
        with WireServer(lambda request: Reply(text="done", usage=(150, 50))) as server:
            limit = "{tokens_per_minute: 24000}" if limited else ""
            workflow = make_project(tmp_path / "p", server, rate_limit=limit)
            text = workflow.read_text().replace(
                "    stream: false\n", "    stream: false\n    max_tokens: 100\n"
            )
            workflow.write_text(text)
            items = write_items(tmp_path / "items.jsonl", [f"q{i}" for i in range(6)])
            summary = asyncio.run(flowrun.run_batch(workflow, items, out=tmp_path / "out", concurrency=6))
            assert summary.ok
            times = [r.received for r in server.requests]
    finally:
        rate_limits.use_book(LocalBook())
    assert len(times) == 6
    if limited:
        assert tokens_ok(book.starts, 200, 24000) and waited_their_turn(times, book.starts)
    else:
        assert not book.starts and not tokens_ok(times, 200, 24000)


def test_the_progress_callback_sees_every_item(server: WireServer, tmp_path: Path) -> None:
    workflow = make_project(tmp_path / "p", server)
    items = write_items(tmp_path / "items.jsonl", [f"q{i}" for i in range(5)])
    seen: list[flowrun.BatchProgress] = []
    summary = asyncio.run(
        flowrun.run_batch(workflow, items, out=tmp_path / "out", concurrency=2, on_progress=seen.append)
    )
    assert summary.ok and seen[-1].completed == 5 and seen[-1].running == 0
    assert max(p.running for p in seen) == 2
    ended = [p.last.id for p in seen if p.last is not None]
    assert sorted(ended) == sorted(r["id"] for r in results(tmp_path / "out"))
    assert seen[-1].cost_usd == pytest.approx(5 * 2 * CALL_COST)
    assert all(p.eta_s is None for p in seen if p.ran == 0)


@pytest.mark.parametrize("processes", ["1", "2"])
def test_set_changes_every_item_in_this_process_or_in_workers(
    server: WireServer, tmp_path: Path, processes: str
) -> None:
    workflow = make_project(tmp_path / "p", server)
    items = write_items(tmp_path / "items.jsonl", ["a", "b", "c", "d"])
    out = tmp_path / "out"
    args = ["batch", str(workflow), str(items), "--out", str(out), "-c", "4", "--processes", processes]
    proc = run_cli([*args, "--set", "models.m.max_tokens=123"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(server.requests) == 8
    assert {r.body["max_tokens"] for r in server.requests} == {123}  # applied where each item ran
    meta = json.loads((out / "batch.json").read_text())
    assert meta["options"]["overrides"] == ["models.m.max_tokens=123"]
    for line in results(out):
        assert json.loads((out / line["run_dir"] / "run.json").read_text())["options"]["overrides"] == [
            "models.m.max_tokens=123"
        ]


def test_a_wrong_set_is_one_line_and_nothing_runs(server: WireServer, tmp_path: Path) -> None:
    workflow = make_project(tmp_path / "p", server)
    items = write_items(tmp_path / "items.jsonl", ["a"])
    args = ["batch", str(workflow), str(items), "--out", str(tmp_path / "out")]
    proc = run_cli([*args, "--set", "models.m.max_tokens=many"], cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "max_tokens" in proc.stderr and "Traceback" not in proc.stderr
    assert not server.requests and not (tmp_path / "out").exists()


def test_a_csv_cell_of_a_whole_document_is_an_input_like_any_other(tmp_path: Path) -> None:
    """A column of whole documents (a cell over the csv module's default 128 KiB) had ended
    `flowrun batch` as an internal error, and `validate` of an eval set with such a dataset
    too; the cell is the item's input, whole."""
    from support.project import scripted_project

    agents = {"w": {"prompt": "You summarise.", "tools": []}}
    inputs = {"document": {"description": "the text"}}
    wf = scripted_project(tmp_path, agents, {"w": [{"text": "done"}] * 4}, entry="w", inputs=inputs)
    document = "word " * 60_000  # 300,000 characters
    (tmp_path / "docs.csv").write_text(f'document\n"{document}"\nshort\n')
    proc = run_cli(["batch", str(wf), "docs.csv", "--out", "out", "-q"], cwd=tmp_path)
    assert proc.returncode == 0 and "2 completed, 0 failed" in proc.stdout, proc.stdout + proc.stderr
    [first] = [line for line in results(tmp_path / "out") if line["line"] == 2]
    recorded = json.loads((tmp_path / "out" / "runs" / first["id"] / "run.json").read_text())
    assert recorded["inputs"]["document"] == document
    (tmp_path / "cases.csv").write_text(f'id,document\nlong,"{document}"\n')
    evalset = "version: 1\nkind: evalset\nname: docs\nworkflow: wf.yaml\ndataset: cases.csv\n"
    (tmp_path / "docs.eval.yaml").write_text(evalset + "graders:\n  - status: completed\n")
    checked = run_cli(["validate", "docs.eval.yaml"], cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
