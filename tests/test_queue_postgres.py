"""The Postgres queue, on a throw-away cluster (support/postgres.py), through real processes on
127.0.0.1: two `flowrun serve http --queue URL` instances and three `flowrun worker` processes
share a runs folder, over both wire formats.

- Runs started through both instances spread over the workers; workers SIGKILLed (each with
  every process it started) at several points: in a run's first model call, in its second (its
  tool ran), while a tool's shell runs, and after a shell ran with the next model call in flight;
  every other run the killed workers held was wherever it was. Another worker takes the runs
  over once the lease runs out: every run completes exactly once, its log whole, no model step
  asked again whose answer the log held at the kill, a step in flight asked again once, and a
  shell the log shows ran (or that was running) not run again.
- A server killed: its client's event stream goes on at the other instance with Last-Event-ID,
  nothing lost or repeated; restarted, it lists every run.
- A decision taken through one instance reaches the run, resumed by whichever worker takes it.

The issue's acceptance asks 300 runs; here 24 run beside the kills (the behaviour is the same
at a twelfth of the machine time); `python bench/queue_full.py` runs these tests with 300
(FLOWRUN_QUEUE_TEST_RUNS), and bench/postgres_queue.py measures 300 over three workers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from support.env import WIRES, model_env
from support.postgres import fresh_database
from support.procs import wait_for
from support.queued import (
    Answers,
    Worker,
    answered,
    check_completed_once,
    follow,
    log_of,
    queue_project,
    start_run,
    steps_asked,
)
from support.served import Served, wait_status
from support.wire_server import WireServer

pytestmark = pytest.mark.xdist_group("postgres")  # one cluster, started once
RUNS = int(os.environ.get("FLOWRUN_QUEUE_TEST_RUNS", "24"))  # the 300: bench/queue_full.py
LEASE = "3"  # seconds: a killed worker's runs are taken over this soon


class Stack:
    """The wire server, two API instances and three workers on one Postgres database."""

    def __init__(self, root: Path, wire: str, url: str) -> None:
        self.root, self.wire = root, wire
        self.answers = Answers(delay_s=0.05)
        self.server = WireServer(self.answers)
        self.env = model_env(self.server, wire)
        self.files = queue_project(root, wire)
        self.runs = root / "runs"
        self.url = fresh_database(url)
        with ThreadPoolExecutor(5) as pool:  # started together: each waits for its first lines
            apis = [pool.submit(self.api) for _ in range(2)]
            workers = [pool.submit(self.worker) for _ in range(3)]
        failed = [f.exception() for f in [*apis, *workers] if f.exception() is not None]
        for started in [*apis, *workers]:
            if failed and started.exception() is None:
                started.result().stop()
        if failed:
            self.server.stop()
            raise failed[0]
        self.apis = [started.result() for started in apis]
        self.workers = [started.result() for started in workers]

    def api(self) -> Served:
        args = [*map(str, self.files), "--port", "0", "--runs-dir", str(self.runs), "--queue", self.url]
        return Served(self.root, args, self.env)

    def worker(self) -> Worker:
        args = [*map(str, self.files), "--runs-dir", str(self.runs), "--queue", self.url, "--lease", LEASE]
        return Worker(self.root, [*args, "--drain-timeout", "1"], self.env)

    def holder(self, run_id: str) -> Worker:
        """The worker whose process holds the run's folder (its lock names the pid)."""
        pid = int((self.runs / run_id / "run.lock").read_text().strip())
        (found,) = [w for w in self.workers if w.proc.pid == pid]
        return found

    def holders(self, *run_ids: str) -> list[Worker]:
        """The workers holding these runs, each once."""
        return list({id(w): w for w in map(self.holder, run_ids)}.values())

    def kill(self, victims: list[Worker]) -> None:
        """SIGKILL workers, each with every process it started (`refill` replaces them)."""
        for worker in victims:
            worker.kill()
        self.workers = [w for w in self.workers if w not in victims]

    def refill(self) -> None:
        """New workers, three again."""
        with ThreadPoolExecutor(3) as pool:
            self.workers += list(pool.map(lambda _: self.worker(), range(3 - len(self.workers))))

    def close(self) -> None:
        self.answers.release.set()
        for served in self.apis:
            served.stop()
        for worker in self.workers:
            worker.stop()
        self.server.stop()


@pytest.fixture(scope="module", params=WIRES)
def stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, postgres_cluster: str
) -> Iterator[Stack]:
    made = Stack(tmp_path_factory.mktemp(f"queue-{request.param}"), request.param, postgres_cluster)
    try:
        yield made
    finally:
        made.close()


def recorded(runs: Path, ids: list[str], task: str) -> set[tuple[str, int]]:
    """The model steps whose answers the runs' logs record now: (task, turn)."""
    steps: set[tuple[str, int]] = set()
    for i, run_id in enumerate(ids):
        if (runs / run_id / "events.jsonl").exists():
            steps |= {(task.format(i), turn) for turn in range(answered(runs / run_id))}
    return steps


def test_runs_spread_over_the_workers_and_survive_workers_killed_in_model_calls(stack: Stack) -> None:
    before = len(stack.server.requests)
    task = f"Question: number {{}} of {stack.wire}"
    # two points: run 5 in its second model call (its tool ran), run 6 in its first
    arrived = [stack.answers.arm(task.format(5), 1), stack.answers.arm(task.format(6), 0)]
    clients = [served.client() for served in stack.apis]
    try:
        ids = [start_run(clients[i % 2], "qa", question=f"number {i} of {stack.wire}") for i in range(RUNS)]
        assert all(event.wait(120) for event in arrived)
        victims = stack.holders(ids[5], ids[6])
        stack.kill(victims)
        kept = recorded(stack.runs, ids, task)  # the answers the logs hold at the kill
        mark = len(stack.server.requests)  # after the reads: a request for those past here is a repeat
        stack.answers.release.set()
        stack.refill()
        with ThreadPoolExecutor(8) as pool:
            ends = list(pool.map(lambda r: wait_status(clients[1], r, "completed", "failed")["status"], ids))
        page = {"status": "completed", "limit": RUNS + 100}
        listed = [c.get("/v1/runs", params=page).json() for c in clients]
    finally:
        for client in clients:
            client.close()
    assert ends == ["completed"] * RUNS
    for page in listed:  # both instances list every run
        assert set(ids) <= {r["id"] for r in page["runs"]}
    resumed = {r for r in ids if "run_resumed" in {e["type"] for e in check_completed_once(stack.runs / r)}}
    assert {ids[5], ids[6]} <= resumed  # taken over from the killed workers
    asked = steps_asked(stack.server.requests[before:])
    assert asked[(task.format(5), 1)] == 2 and asked[(task.format(6), 0)] == 2  # in flight: sent again once
    assert asked[(task.format(5), 0)] == 1  # its answer was recorded
    again = steps_asked(stack.server.requests[mark:])
    assert not [step for step in kept if again[step]]  # no recorded answer asked for again
    assert all(n <= 2 for n in asked.values())
    # a step asked twice was in flight at a kill: its run was taken over (resumed)
    twice = {task for (task, _), n in asked.items() if n > 1}
    assert twice <= {task.format(ids.index(r)) for r in resumed}, twice
    takers = {w.id for w in [*victims, *stack.workers] for r in ids if w.took(r)}
    assert len(takers) >= 3  # the runs spread over the workers


def test_workers_killed_in_a_tool_call_and_after_one_never_run_it_twice(stack: Stack) -> None:
    before = len(stack.server.requests)
    task = f"Run it for {{}} the shell over {stack.wire}."
    after = stack.answers.arm(task.format("after"), 1)  # its shell ran; the next model call waits
    with stack.apis[0].client() as http:
        during = start_run(http, "slow", question=f"during the shell over {stack.wire}")
        later = start_run(http, "slow", question=f"after the shell over {stack.wire}")
        (stack.runs / later / "go.mark").touch()  # its shell ends at once
        assert wait_for(lambda: (stack.runs / during / "started.mark").exists())  # the shell runs
        assert after.wait(120)
        stack.kill(stack.holders(during, later))  # with the shell it started
        (stack.runs / during / "go.mark").touch()  # a shell left alive would now end, and say so
        stack.answers.release.set()
        stack.refill()
        done = [wait_status(http, run_id, "completed", "failed") for run_id in (during, later)]
    assert [d["status"] for d in done] == ["completed", "completed"], done
    results = {}
    for run_id in (during, later):
        events = check_completed_once(stack.runs / run_id)
        (results[run_id],) = [e["result"] for e in events if e["type"] == "tool_result"]
    assert (stack.runs / during / "ran.log").read_text() == "ran\n"  # run once, killed with its worker
    assert results[during]["error"]["code"] == "EFFECT_UNKNOWN"  # the agent is told, the call not run again
    assert (stack.runs / later / "ran.log").read_text() == "ran\nended\n"  # its recorded run, once
    assert results[later]["status"] == "success", results[later]
    asked = steps_asked(stack.server.requests[before:])
    assert asked[(task.format("during"), 0)] == 1 and asked[(task.format("after"), 0)] == 1
    assert asked[(task.format("after"), 1)] == 2  # in flight at the kill: sent again, once


def test_a_server_killed_its_clients_stream_goes_on_at_the_other(stack: Stack) -> None:
    arrived = stack.answers.arm(f"streamed over {stack.wire}", 1)
    first, second = stack.apis
    with first.client() as http:
        run_id = start_run(http, "qa", question=f"streamed over {stack.wire}")
        assert arrived.wait(120)
        seen, _ = follow(http, run_id, stop_after=3)
    first.kill()
    with second.client() as http:
        stack.answers.release.set()
        rest, status = follow(http, run_id, after=seen[-1])
    assert status == "completed"
    events = check_completed_once(stack.runs / run_id)
    assert seen + rest == [e["seq"] for e in events]  # nothing lost, nothing twice
    stack.apis[0] = restarted = stack.api()
    with restarted.client() as http:
        listed = http.get("/v1/runs", params={"limit": 1000}).json()
    assert run_id in {r["id"] for r in listed["runs"]}


def test_a_decision_through_one_instance_reaches_the_run(stack: Stack) -> None:
    first, second = stack.apis
    with first.client() as one, second.client() as other:
        run_id = start_run(one, "gate")
        waiting = wait_status(other, run_id, "waiting", "failed", "completed")
        assert waiting["status"] == "waiting" and waiting["pending"][0]["tool"] == "write_file"
        decided = other.post(f"/v1/runs/{run_id}/decisions", json={"allow": True})
        assert decided.status_code == 200, decided.text
        assert decided.json()["status"] == "queued"
        done = wait_status(one, run_id, "completed", "failed", "waiting")
    assert done["status"] == "completed"
    assert (stack.runs / run_id / "out.txt").read_text() == "ok\n"
    ends = [e.get("status") for e in log_of(stack.runs / run_id) if e["type"] == "run_end"]
    assert ends == ["waiting", "completed"]


def test_a_cancel_through_one_instance_stops_the_run_a_worker_holds(stack: Stack) -> None:
    arrived = stack.answers.arm(f"stopped over {stack.wire}", 1)
    first, second = stack.apis
    with first.client() as one, second.client() as other:
        run_id = start_run(one, "qa", question=f"stopped over {stack.wire}")
        assert arrived.wait(120)  # a worker holds it, in its second model call
        cancelled = other.post(f"/v1/runs/{run_id}/cancel")
        stack.answers.release.set()
        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["status"] == "cancelled" and cancelled.json()["resumable"]
        resumed = one.post(f"/v1/runs/{run_id}/resume")
        assert resumed.status_code == 202 and resumed.json()["status"] == "queued", resumed.text
        done = wait_status(other, run_id, "completed", "failed")
    assert done["status"] == "completed"
    ends = [e.get("status") for e in log_of(stack.runs / run_id) if e["type"] == "run_end"]
    assert ends == ["cancelled", "completed"]


def test_flowrun_workers_shows_the_three_workers(stack: Stack) -> None:
    from support.cli import run_cli

    shown = run_cli(["workers", "--queue", stack.url, "--runs-dir", str(stack.runs)], cwd=stack.root)
    assert shown.returncode == 0, shown.stderr
    assert all(w.id in shown.stdout for w in stack.workers), shown.stdout
    with httpx.Client(base_url=stack.apis[1].base) as http:
        rows = http.get("/v1/workers").json()["workers"]
    assert {w.id for w in stack.workers} <= {row["id"] for row in rows}


def test_a_worker_starts_while_runs_are_being_queued(tmp_path: Path, postgres_cluster: str) -> None:
    """A worker that starts (or restarts after a kill) while an API instance queues a run: the
    queue's tables exist, so it takes no table lock; `CREATE INDEX IF NOT EXISTS` would have
    waited for the queueing transaction's row locks and, with its own, deadlocked it."""
    import psycopg

    url = fresh_database(postgres_cluster)
    files = queue_project(tmp_path, "openai")
    args = [*map(str, files), "--runs-dir", str(tmp_path / "runs"), "--queue", url]
    Worker(tmp_path, args, {}).stop()  # the tables made
    with psycopg.connect(url) as queueing:  # a run being queued: its rows written, not committed
        queueing.execute("LOCK TABLE flowrun_runs, flowrun_jobs IN ROW EXCLUSIVE MODE")
        started = Worker(tmp_path, args, {})
        started.stop()
        queueing.rollback()
    assert started.id in "".join(started.lines)
