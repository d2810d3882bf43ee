"""`flowrun batch --queue`: a batch's items as jobs of a queue, run by `flowrun worker` processes
(those `--workers N` starts, or one started apart), through the CLI against the scripted wire
server: every item completed once in the batch's `runs/<item id>/`, results.jsonl as with any
backend, the same command again skipping what is done; a batch stopped (SIGTERM) and resumed
without a recorded model step asked again; the batch's `--max-cost-usd` over two workers
(exit 4, the others stopped resumably, a higher budget goes on); the same on Postgres; the
options that do not go together refused in one line."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from support.cli import popen_cli, run_cli
from support.env import WIRES, model_env
from support.postgres import fresh_database
from support.procs import DEADLINE_S, wait_for
from support.queued import Answers, Worker, log_of, queue_project, steps_asked, task_of
from support.wire_server import Reply, WireRequest, WireServer

PRICE = {"input": 1000, "output": 2000}  # USD per million: a call of 10 + 5 tokens costs $0.02
CALL_COST = 0.02


def write_items(path: Path, count: int) -> Path:
    path.write_text(
        "".join(json.dumps({"id": f"q{i}", "question": f"number {i}"}) + "\n" for i in range(count))
    )
    return path


def results(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def a_batch(
    root: Path, server: WireServer, count: int, *extra: str, **model_keys: Any
) -> tuple[dict[str, str], Path, list[str]]:
    """The qa project (openai wire) with `count` items: the environment, the batch folder and
    `flowrun batch`'s arguments (then `extra`)."""
    qa = queue_project(root, "openai", **model_keys)[0]
    items, out = write_items(root / "items.jsonl", count), root / "out"
    return model_env(server, "openai"), out, ["batch", str(qa), str(items), "--out", str(out), *extra]


def takers(out: Path) -> set[str]:
    """The workers whose lines in workers.log say they took an item."""
    text = (out / "workers.log").read_text() if (out / "workers.log").exists() else ""
    return {line.split()[1] for line in text.splitlines() if " took " in line}


def recorded_steps(out: Path) -> set[tuple[str, int]]:
    """(task, turn) of every model answer the items' logs hold."""
    found: set[tuple[str, int]] = set()
    for run_dir in (out / "runs").iterdir():
        if not (run_dir / "events.jsonl").is_file():
            continue
        events = log_of(run_dir)
        question = next(e["inputs"]["question"] for e in events if e["type"] == "run_start")
        answers = [e for e in events if e["type"] == "model_response"]
        found |= {(f"Question: {question}", turn) for turn in range(len(answers))}
    return found


def check_all_completed(out: Path, count: int) -> None:
    lines = results(out)
    assert [r["id"] for r in lines] == [f"q{i}" for i in range(count)]  # the items file's order
    for line in lines:
        assert line["status"] == "completed" and line["run_dir"] == f"runs/{line['id']}", line
        events = log_of(out / line["run_dir"])  # whole, one run, ended completed (a stop between)
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert [e["type"] for e in events].count("run_start") == 1
        assert events[-1]["type"] == "run_end" and events[-1]["status"] == "completed"
        assert [e["type"] for e in events].count("model_response") == 2  # each step recorded once
        start = next(e for e in events if e["type"] == "run_start")
        assert start["inputs"] == {"question": f"number {line['id'][1:]}"}


def test_ctrl_c_stops_the_batch_whose_items_its_workers_stop_through_the_queue(tmp_path: Path) -> None:
    answers = Answers()
    with WireServer(answers) as server:
        env, out, args = a_batch(tmp_path, server, 4, "-c", "2", "--workers", "2")
        held = answers.arm("number 1", 1)  # the second item waits in its second model call
        batch = popen_cli(args, tmp_path, env, new_session=True)  # as a terminal runs it
        try:
            assert held.wait(DEADLINE_S)
            os.killpg(batch.pid, signal.SIGINT)  # Ctrl-C: to the terminal's process group
            _, stderr = batch.communicate(timeout=DEADLINE_S)
        finally:
            answers.release.set()
        assert batch.returncode == 130, stderr
        assert {r["id"]: r["status"] for r in results(out)}["q1"] == "cancelled"
        log = (out / "workers.log").read_text()
        assert f"ended {(out / 'runs/q1').resolve()}: cancelled" in log  # its worker stopped it
        assert " drains: " not in log  # the workers were not signalled while they held items
        again = run_cli(args, cwd=tmp_path, env=env)
        assert again.returncode == 0 and "4 items: 4 completed, 0 failed" in again.stdout, again.stderr
    check_all_completed(out, 4)


class AtOnce:
    """Answers as `Answers`, but the first model calls of the first `together` items wait until
    all of them arrived: that many items run at once, so with a worker's share of the
    concurrency below it, on both workers. `hold_later`: the second calls of all but the first
    item also wait, for `release`; the first item's waits until the others' arrived (their
    first answers are in their logs then, as a run records an answer before it goes on)."""

    def __init__(self, together: int, hold_later: bool = False) -> None:
        self.inner = Answers()
        self.together, self.hold_later = together, hold_later
        self.first: set[str] = set()
        self.later: set[str] = set()
        self.all_in = threading.Event()
        self.others_later = threading.Event()
        self.release = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, request: WireRequest) -> Reply:
        task = task_of(request)
        if request.assistant_turns == 0:
            with self.lock:
                self.first.add(task)
                if len(self.first) >= self.together:
                    self.all_in.set()
            self.all_in.wait(DEADLINE_S)
        elif self.hold_later and task.endswith("number 0"):
            self.others_later.wait(DEADLINE_S)
        elif self.hold_later:
            with self.lock:
                self.later.add(task)
                if len(self.later) >= self.together - 1:
                    self.others_later.set()
            self.release.wait(DEADLINE_S)
        return self.inner(request)


@pytest.mark.parametrize("wire", WIRES)
def test_two_workers_run_a_batch_from_the_queue_and_the_same_command_skips_it(
    tmp_path: Path, wire: str
) -> None:
    with WireServer(AtOnce(4)) as server:  # 3 items a worker at most: both run some
        qa = queue_project(tmp_path, wire)[0]
        items, out = write_items(tmp_path / "items.jsonl", 12), tmp_path / "out"
        args = ["batch", str(qa), str(items), "--out", str(out), "-c", "6", "--workers", "2"]
        proc = run_cli(args, cwd=tmp_path, env=model_env(server, wire))
        assert proc.returncode == 0, proc.stderr
        assert "12 items: 12 completed, 0 failed (12 run now)" in proc.stdout
        check_all_completed(out, 12)
        asked = steps_asked(server.requests)
        assert len(asked) == 24 and set(asked.values()) == {1}  # each model step asked once
        assert len(takers(out)) == 2  # both workers took items (up to 3 each of the 6 at once)
        assert json.loads((out / "batch.json").read_text())["options"]["queue"] == "embedded"
        again = run_cli(args, cwd=tmp_path, env=model_env(server, wire))
        assert again.returncode == 0 and "(0 run now)" in again.stdout
        assert len(server.requests) == 24  # nothing asked again


def test_a_worker_started_apart_runs_the_items_and_a_stopped_batch_resumes(tmp_path: Path) -> None:
    answers = Answers()
    with WireServer(answers) as server:
        env, out, args = a_batch(tmp_path, server, 6, "-c", "2", "--queue", "embedded")
        qa = tmp_path / "qa.yaml"
        held = answers.arm("number 2", 1)  # the third item waits in its second model call
        batch = popen_cli(args, tmp_path, env)
        assert wait_for(lambda: (out / "runs").is_dir() or batch.poll() is not None)
        worker = Worker(tmp_path, [str(qa), "--runs-dir", str(out / "runs")], env)
        try:
            assert held.wait(DEADLINE_S)
            batch.send_signal(signal.SIGTERM)  # stops the batch: its items in the queue too
            _, stderr = batch.communicate(timeout=DEADLINE_S)
            answers.release.set()
            assert batch.returncode == 143, stderr  # stopped by SIGTERM, resumable
            stopped = {r["id"]: r["status"] for r in results(out)}
            assert stopped["q0"] == stopped["q1"] == "completed" and stopped["q2"] == "cancelled"
            assert json.loads((out / "runs/q2/run.json").read_text())["status"] == "cancelled"
            recorded, before = recorded_steps(out), len(server.requests)
            again = run_cli(args, cwd=tmp_path, env=env)  # the same worker takes the rest
        finally:
            answers.release.set()
            worker.stop()
        assert again.returncode == 0, again.stderr
        assert "6 items: 6 completed, 0 failed" in again.stdout
        later = server.requests[before:]
    check_all_completed(out, 6)
    assert not {(task_of(r), r.assistant_turns) for r in later} & recorded  # no recorded step asked again
    assert worker.took(str((out / "runs/q2").resolve()))


def worker_pids(out: Path) -> set[int]:
    """The pids of the workers that said in workers.log they take runs (an id is HOST-PID-HEX)."""
    text = (out / "workers.log").read_text() if (out / "workers.log").exists() else ""
    return {int(line.split()[1].rsplit("-", 2)[1]) for line in text.splitlines() if " takes runs of " in line}


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def test_a_killed_batch_leaves_no_worker_running_and_the_next_one_ends_its_items(tmp_path: Path) -> None:
    answers = Answers()
    with WireServer(answers) as server:
        env, out, args = a_batch(tmp_path, server, 4, "-c", "2", "--workers", "2")
        held = answers.arm("number 1", 1)  # the second item waits in its second model call
        batch = popen_cli(args, tmp_path, env)
        try:
            assert held.wait(DEADLINE_S) and wait_for(lambda: len(worker_pids(out)) == 2)
            pids = worker_pids(out)
            batch.kill()  # SIGKILL: the batch tells its workers nothing
            batch.communicate(timeout=DEADLINE_S)
            answers.release.set()  # the held item ends as its worker drains
            assert wait_for(lambda: not any(map(running, pids)))  # both workers drained and exited
        finally:
            answers.release.set()
        again = run_cli(args, cwd=tmp_path, env=env)
        assert again.returncode == 0, again.stderr
        assert "4 items: 4 completed, 0 failed" in again.stdout
    check_all_completed(out, 4)
    twice = [step for step, n in steps_asked(server.requests).items() if n > 1]
    # only the held call, had its worker's drain run out first (then it stopped it, resumably)
    assert twice in ([], [("Question: number 1", 1)]), (out / "workers.log").read_text()


def test_the_batch_budget_holds_over_two_workers_and_a_higher_one_goes_on(tmp_path: Path) -> None:
    # four items at once, two on each worker; the first item's second answer is the fifth call,
    # which reaches the budget while the other three are in their second call (their first
    # answers recorded: the budget is counted from the logs)
    answers = AtOnce(4, hold_later=True)
    with WireServer(answers) as server:
        env, out, args = a_batch(tmp_path, server, 8, "-c", "4", "--workers", "2", price=PRICE)
        try:
            proc = run_cli([*args, "--max-cost-usd", "0.1"], cwd=tmp_path, env=env)
        finally:
            answers.release.set()
        assert proc.returncode == 4, proc.stderr
        assert "8 items: 1 completed, 0 failed, 3 stopped, 4 not started" in proc.stdout
        assert "status: budget_exceeded" in proc.stdout and "cost $0.1000" in proc.stdout
        assert "max_cost_usd ($0.1) was reached" in proc.stderr
        assert len(takers(out)) == 2  # the four first items ran two on each worker
        ended = {r["id"]: r["status"] for r in results(out)}
        assert ended == {"q0": "completed", "q1": "cancelled", "q2": "cancelled", "q3": "cancelled"}
        for item_id, status in ended.items():  # the runs stopped resumably, whichever worker ran them
            assert json.loads((out / "runs" / item_id / "run.json").read_text())["status"] == status
        recorded, before = recorded_steps(out), len(server.requests)
        assert len(recorded) == 5
        again = run_cli([*args, "--max-cost-usd", "1"], cwd=tmp_path, env=env)
        assert again.returncode == 0, again.stderr
        assert "8 items: 8 completed" in again.stdout and "cost $0.3200" in again.stdout
        later = server.requests[before:]
    check_all_completed(out, 8)
    assert not {(task_of(r), r.assistant_turns) for r in later} & recorded


@pytest.mark.xdist_group("postgres")
def test_a_batch_on_postgres_runs_on_its_workers(tmp_path: Path, postgres_cluster: str) -> None:
    url = fresh_database(postgres_cluster)
    with WireServer(Answers(delay_s=0.02)) as server:
        qa = queue_project(tmp_path, "anthropic")[0]
        items, out = write_items(tmp_path / "items.jsonl", 6), tmp_path / "out"
        args = ["batch", str(qa), str(items), "--out", str(out), "-c", "4", "--queue", url, "--workers", "2"]
        proc = run_cli(args, cwd=tmp_path, env=model_env(server, "anthropic"))
        assert proc.returncode == 0, proc.stderr
        assert "6 items: 6 completed, 0 failed (6 run now)" in proc.stdout
        assert set(steps_asked(server.requests).values()) == {1}
    check_all_completed(out, 6)
    assert not (out / "runs" / ".queue.sqlite").exists()  # the jobs were Postgres's
    assert json.loads((out / "batch.json").read_text())["options"]["queue"] == url


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--queue", "embedded", "--processes", "2"], "--processes is not for a batch on a queue"),
        (["--workers", "2", "--backend", "ray"], "--queue and --workers are for the local backend"),
        (["--queue", "mysql://db/x"], "--queue 'mysql://db/x' is not a queue"),
    ],
)
def test_options_that_do_not_go_with_a_queue_are_one_line(
    tmp_path: Path, extra: list[str], said: str
) -> None:
    qa = queue_project(tmp_path, "openai")[0]
    items = write_items(tmp_path / "items.jsonl", 2)
    proc = run_cli(["batch", str(qa), str(items), "--out", str(tmp_path / "out"), *extra], cwd=tmp_path)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "out").exists()


def test_a_queue_that_cannot_be_reached_is_one_line(tmp_path: Path) -> None:
    qa = queue_project(tmp_path, "openai")[0]
    items = write_items(tmp_path / "items.jsonl", 2)
    url = "postgresql://flowrun:secret@127.0.0.1:1/none"  # nothing listens on port 1
    args = ["batch", str(qa), str(items), "--out", str(tmp_path / "out"), "--queue", url]
    proc = run_cli(args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "cannot open the queue postgresql://flowrun@127.0.0.1:1/none: " in proc.stderr
    assert "Traceback" not in proc.stderr and "secret" not in proc.stderr
