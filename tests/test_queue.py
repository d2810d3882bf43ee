"""The embedded queue (SQLite in the runs folder), through real processes on 127.0.0.1: `flowrun
serve http --workers 2` runs many runs started through the API, each completed once, with the
runs list and every run's event stream right, over both wire formats; a run waits in the queue
as `queued` (every view says so), is cancelled there and resumed by a worker; `flowrun.submit`
queues from Python; a worker stopped with SIGTERM hands its run back, and another resumes it;
`flowrun workers` lists the workers and their runs.

The issue's acceptance asks 100 runs of `serve http --workers 2`; here 40 do (each run is two
model calls and a tool call: the behaviour is the same); `python bench/queue_full.py` runs this
test at 100 (FLOWRUN_QUEUE_TEST_RUNS)."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support.cli import run_cli
from support.env import WIRES, model_env
from support.procs import wait_for
from support.queued import (
    Answers,
    Worker,
    check_completed_once,
    follow,
    log_of,
    queue_project,
    serve_queued,
    start_run,
    steps_asked,
)
from support.served import status_of, wait_status
from support.wire_server import WireServer

import flowrun

# the 100 (bench/queue_full.py runs these tests at that size): the same behaviour at
# less than half the machine time
RUNS = int(os.environ.get("FLOWRUN_QUEUE_TEST_RUNS", "40"))


@pytest.mark.parametrize("wire", WIRES)
def test_two_workers_complete_every_run_once_with_the_list_and_sse_right(tmp_path: Path, wire: str) -> None:
    runs = tmp_path / "runs"
    answers = Answers(delay_s=0.05)
    with WireServer(answers) as server:
        files = queue_project(tmp_path, wire)
        served = serve_queued(tmp_path, files, model_env(server, wire), "--workers", "2")
        try:
            with served.client() as http:
                ids = [start_run(http, "qa", question=f"number {i}") for i in range(RUNS)]
                listed = http.get("/v1/runs", params={"limit": 1000}).json()
                assert {r["id"] for r in listed["runs"]} == set(ids) and listed["total"] == RUNS
                with ThreadPoolExecutor(RUNS) as pool:
                    followed = list(pool.map(lambda run_id: follow(http, run_id), ids))
                done = http.get("/v1/runs", params={"status": "completed", "limit": 1000}).json()
                workers = http.get("/v1/workers").json()["workers"]
        finally:
            served.stop()
    assert done["total"] == RUNS and {r["id"] for r in done["runs"]} == set(ids)
    for run_id, (seqs, status) in zip(ids, followed, strict=True):
        events = check_completed_once(runs / run_id)
        assert status == "completed" and seqs == [e["seq"] for e in events]  # every event once, in order
        assert not any(e["type"] == "run_resumed" for e in events)
    asked = steps_asked(server.requests)
    assert len(asked) == 2 * RUNS and set(asked.values()) == {1}  # no model step asked twice
    takers = Counter(line.split()[1] for line in served.lines if " took " in line)
    assert len(takers) == 2 and len(workers) == 2  # both workers took runs,
    assert min(takers.values()) >= RUNS // 4  # each about its share (not one the whole burst)
    assert any("stopped" in line for line in served.lines)  # drained as the server stopped


def test_a_queued_run_is_listed_queued_cancelled_then_resumed_by_a_worker(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    answers = Answers()
    with WireServer(answers) as server:
        files = queue_project(tmp_path, "openai")
        env = model_env(server, "openai")
        served = serve_queued(tmp_path, files, env)
        try:
            with served.client() as http:
                run_id = start_run(http, "qa", question="later")
                assert status_of(http, run_id) == "queued"
                shown = run_cli(["runs", "--runs-dir", str(runs)], cwd=tmp_path)
                assert run_id in shown.stdout and "queued" in shown.stdout, shown.stdout
                cancelled = http.post(f"/v1/runs/{run_id}/cancel")
                assert cancelled.status_code == 200, cancelled.text
                assert cancelled.json()["status"] == "cancelled" and cancelled.json()["resumable"]
                assert status_of(http, run_id) == "cancelled"
                assert flowrun.list_runs(runs).runs[0].status == "cancelled"
                resumed = http.post(f"/v1/runs/{run_id}/resume")
                assert resumed.status_code == 202 and resumed.json()["status"] == "queued", resumed.text
                again = http.post(f"/v1/runs/{run_id}/resume")
                assert again.status_code == 409  # in the queue already
                worker = Worker(tmp_path, [*map(str, files), "--runs-dir", str(runs)], env)
                try:
                    done = wait_status(http, run_id, "completed", "failed")
                finally:
                    worker.stop()
        finally:
            served.stop()
    assert done["status"] == "completed" and done["message"] == "Answer to later"
    check_completed_once(runs / run_id)
    assert worker.took(run_id) and any("stopped" in line for line in worker.lines)


def test_flowrun_submit_queues_from_python_and_flowrun_workers_lists_the_worker(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    files = queue_project(tmp_path, "openai")
    wf = flowrun.load(files[0])
    with pytest.raises(flowrun.UsageError, match="question"):
        flowrun.submit(wf, {}, runs_dir=runs)  # a missing input: nothing queued
    ids = [
        flowrun.submit(wf, {"question": f"q{i}"}, flowrun.RunOptions(dry_run=True), runs_dir=runs)
        for i in range(3)
    ]
    assert {e.id: e.status for e in flowrun.list_runs(runs)} == dict.fromkeys(ids, "queued")
    worker = Worker(tmp_path, [str(files[0]), "--runs-dir", str(runs)], {})
    try:
        assert wait_for(lambda: all(e.status == "completed" for e in flowrun.list_runs(runs)))
        listed = run_cli(["workers", "--runs-dir", str(runs)], cwd=tmp_path)
    finally:
        worker.stop()
    assert listed.returncode == 0 and worker.id in listed.stdout and " up " in listed.stdout, listed.stdout
    after = run_cli(["workers", "--runs-dir", str(runs), "--all"], cwd=tmp_path)
    assert worker.id in after.stdout and "stopped" in after.stdout, after.stdout
    for run_id in ids:
        check_completed_once(runs / run_id)


def test_a_worker_stopped_with_sigterm_hands_its_run_back_and_another_resumes_it(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    answers = Answers()
    with WireServer(answers) as server:
        files = queue_project(tmp_path, "anthropic")
        env = model_env(server, "anthropic")
        served = serve_queued(tmp_path, files, env)
        args = [*map(str, files), "--runs-dir", str(runs), "--drain-timeout", "0.5"]
        first = Worker(tmp_path, args, env)
        try:
            with served.client() as http:
                arrived = answers.arm("drained", 1)
                run_id = start_run(http, "qa", question="drained")
                assert arrived.wait(120)  # its second model call is in flight
                assert first.took(run_id)
                first.proc.send_signal(signal.SIGTERM)
                assert wait_for(lambda: any(f"handed {run_id} back" in line for line in first.lines)), (
                    first.lines
                )
                assert first.proc.wait(timeout=60) == 0
                second = Worker(tmp_path, args, env)
                answers.release.set()
                done = wait_status(http, run_id, "completed", "failed")
                second.stop()
        finally:
            answers.release.set()
            first.stop()
            served.stop()
    assert done["status"] == "completed"
    events = log_of(runs / run_id)
    ends = [(e["type"], e.get("status")) for e in events if e["type"] in ("run_end", "run_resumed")]
    assert ends == [("run_end", "cancelled"), ("run_resumed", None), ("run_end", "completed")]
    assert second.took(run_id) and os.path.isdir(runs / run_id)
    asked = steps_asked(server.requests)
    assert (
        asked[("Question: drained", 1)] == 2 and asked[("Question: drained", 0)] == 1
    )  # the one in flight, again


def most_at_once(spans: list[tuple[float, float]]) -> int:
    """The most spans (start, end) that overlap at one moment."""
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    at_once = most = 0
    for _, step in edges:
        at_once += step
        most = max(most, at_once)
    return most


def test_the_concurrency_limits_hold_across_workers(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    answers = Answers(delay_s=0.1)
    held = [answers.arm(f"limited {i}", 0) for i in range(3)]  # three runs held in a model call
    with WireServer(answers) as server:
        files = queue_project(tmp_path, "openai")
        limits = ["--workers", "2", "--concurrency", "2", "--max-runs", "3", "--max-runs-per", "slow=1"]
        served = serve_queued(tmp_path, files, model_env(server, "openai"), *limits)
        try:
            with served.client() as http:
                ids = [start_run(http, "qa", question=f"limited {i}") for i in range(3)]
                slow = [start_run(http, "slow", question=f"limited {i}") for i in range(3)]
                for run_id in slow:
                    (runs / run_id / "go.mark").touch()  # each shell ends at once
                ids += [*slow, *(start_run(http, "qa", question=f"limited {i}") for i in range(3, 9))]
                assert all(event.wait(120) for event in held)
                holding = [w["runs"] for w in http.get("/v1/workers").json()["workers"]]
                waiting = {status_of(http, run_id) for run_id in ids[3:]}
                answers.release.set()
                ends = [wait_status(http, run_id, "completed", "failed")["status"] for run_id in ids]
        finally:
            answers.release.set()
            served.stop()
    assert sorted(map(len, holding)) == [1, 2]  # the held three, over both workers (2 at most each)
    assert waiting == {"queued"}  # the limit of 3 over all workers: nothing else taken
    assert ends == ["completed"] * len(ids)
    # each run's events lie within its worker's hold on it: spans that overlap were held at once
    spans = {run_id: (log_of(runs / run_id)[0]["t"], log_of(runs / run_id)[-1]["t"]) for run_id in ids}
    assert most_at_once(list(spans.values())) <= 3
    assert most_at_once([spans[run_id] for run_id in slow]) == 1


def test_a_worker_frozen_past_its_lease_keeps_its_run(tmp_path: Path) -> None:
    """A worker stopped (SIGSTOP) longer than its lease: another claims the run, finds its folder
    held and hands it back; the frozen worker, going on, takes the job back and ends the run,
    which never stopped: no second start, nothing asked again."""
    runs = tmp_path / "runs"
    answers = Answers()
    arrived = answers.arm("frozen", 1)
    with WireServer(answers) as server:
        files = queue_project(tmp_path, "openai")
        env = model_env(server, "openai")
        served = serve_queued(tmp_path, files, env)
        args = [*map(str, files), "--runs-dir", str(runs), "--lease", "2"]
        frozen = Worker(tmp_path, args, env)
        other: Worker | None = None
        try:
            with served.client() as http:
                run_id = start_run(http, "qa", question="frozen")
                assert arrived.wait(120) and frozen.took(run_id)
                frozen.proc.send_signal(signal.SIGSTOP)
                other = Worker(tmp_path, args, env)
                assert wait_for(lambda: other is not None and other.took(run_id)), other.lines
                frozen.proc.send_signal(signal.SIGCONT)
                answers.release.set()
                done = wait_status(http, run_id, "completed", "failed")
        finally:
            answers.release.set()
            frozen.proc.send_signal(signal.SIGCONT)
            for worker in (frozen, other):
                if worker is not None:
                    worker.stop()
            served.stop()
    assert done["status"] == "completed"
    events = check_completed_once(runs / run_id)
    assert "run_resumed" not in {e["type"] for e in events}  # the frozen worker ended it
    assert any(f"ended {run_id}: completed" in line for line in frozen.lines), frozen.lines
    assert set(steps_asked(server.requests).values()) == {1}  # nothing asked twice


def test_a_models_rate_limit_is_shared_by_the_workers(tmp_path: Path) -> None:
    """120 requests a minute (two at once, then one every 0.5 s) over two workers holding two
    runs each: the calls of both keep to one schedule, kept in the queue's database."""
    runs = tmp_path / "runs"
    answers = Answers()
    held = [answers.arm(f"paced {i}", 0) for i in range(4)]  # the four runs at once: both workers
    with WireServer(answers) as server:
        files = queue_project(tmp_path, "openai", rate_limit={"requests_per_minute": 120})
        env = model_env(server, "openai")
        served = serve_queued(tmp_path, files, env, "--workers", "2", "--concurrency", "2")
        try:
            with served.client() as http:
                begun, wall = time.monotonic(), time.time()
                ids = [start_run(http, "qa", question=f"paced {i}") for i in range(4)]
                assert all(event.wait(120) for event in held)
                holding = [w["runs"] for w in http.get("/v1/workers").json()["workers"]]
                answers.release.set()
                ends = [wait_status(http, run_id, "completed", "failed")["status"] for run_id in ids]
        finally:
            answers.release.set()
            served.stop()
        arrivals = sorted(r.received - begun for r in server.requests)
    assert ends == ["completed"] * 4 and sorted(map(len, holding)) == [2, 2]
    # a call arrives after it starts, so the k-th arrival is no earlier than the k-th start,
    # and one schedule starts the k-th call (from 0) no earlier than (k - 1) x 0.5 s
    assert len(arrivals) == 8
    assert all(at >= (k - 1) * 0.5 - 0.01 for k, at in enumerate(arrivals)), arrivals
    with sqlite3.connect(runs / ".queue.sqlite") as db:
        ((booked,),) = db.execute("SELECT requests_at FROM flowrun_rates").fetchall()
    assert booked >= wall + 8 * 0.5 - 0.01  # every call of both workers booked on it


def test_a_worker_takes_its_share_of_a_burst_and_what_waited_goes_to_anyone(tmp_path: Path) -> None:
    """Two live workers, ten runs queued at once: the first to look takes five, not ten (its
    loop would run them all while the other idles); the other takes the rest. A run that waited
    FAIR_S goes to whichever worker looks, past its share."""
    from flowrun.queue.store import FAIR_S, Limits
    from flowrun.queue.submit import Queue

    queue = Queue(None, tmp_path / "runs")
    store = queue.store
    try:
        first, second = (store.register(32, 30.0, ["qa"]) for _ in range(2))
        for i in range(10):
            store.enqueue(f"run-{i}", "qa", "start", {})
        taken = store.claim(first, ["qa"], 32, 30.0, Limits())
        assert [job.run_id for job in taken] == [f"run-{i}" for i in range(5)]
        assert store.claim(first, ["qa"], 32, 30.0, Limits()) == []  # its share is held
        assert len(store.claim(second, ["qa"], 32, 30.0, Limits())) == 5
        store.enqueue("next", "qa", "start", {})
        store.enqueue("late", "qa", "start", {})
        assert [job.run_id for job in store.claim(first, ["qa"], 32, 30.0, Limits())] == ["next"]
        assert store.claim(first, ["qa"], 32, 30.0, Limits()) == []  # the second's share
        with store.db.transaction() as cur:
            cur.run("UPDATE flowrun_jobs SET enqueued = enqueued - ? WHERE run_id = 'late'", (FAIR_S,))
        assert [job.run_id for job in store.claim(first, ["qa"], 32, 30.0, Limits())] == ["late"]
    finally:
        queue.close()
