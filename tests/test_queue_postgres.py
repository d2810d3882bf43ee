"""The Postgres queue, on a throw-away cluster (support/postgres.py), through real processes on
127.0.0.1: two `flowrun serve http --queue URL` instances and three `flowrun worker` processes
share a runs folder, over both wire formats.

- Runs started through both instances spread over the workers; a worker SIGKILLed while a model
  call is in flight (held at the wire server) and while a tool call runs (its shell waits for a
  file): another worker takes the runs over once the lease runs out, every run completes exactly
  once, its log whole, no model step asked again but the one in flight at the kill (once), and
  the shell that ran is not run again.
- A server killed: its client's event stream goes on at the other instance with Last-Event-ID,
  nothing lost or repeated; restarted, it lists every run.
- A decision taken through one instance reaches the run, resumed by whichever worker takes it.

The issue's acceptance asks 300 runs; here 24 run beside the kills (the behaviour is the same;
bench/queue.py runs 300 over three workers)."""

from __future__ import annotations

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
RUNS = 24  # the 300: bench/queue.py
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
        self.apis = [self.api(), self.api()]
        self.workers = [self.worker() for _ in range(3)]

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

    def kill(self, worker: Worker) -> None:
        """SIGKILL a worker (and with it the processes its runs started); a new one replaces it."""
        worker.kill()
        self.workers = [w for w in self.workers if w is not worker] + [self.worker()]

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


def arm(answers: Answers, text: str, turn: int) -> None:
    answers.holding.clear()
    answers.release.clear()
    answers.hold = (text, turn)


def test_runs_spread_over_the_workers_and_survive_a_worker_killed_in_a_model_call(stack: Stack) -> None:
    before = len(stack.server.requests)
    arm(stack.answers, "number 5 of", 1)
    clients = [served.client() for served in stack.apis]
    try:
        ids = [start_run(clients[i % 2], "qa", question=f"number {i} of {stack.wire}") for i in range(RUNS)]
        assert stack.answers.holding.wait(120)  # run 5's second model call is in flight
        held = ids[5]
        victim = stack.holder(held)
        stack.kill(victim)
        stack.answers.release.set()
        with ThreadPoolExecutor(8) as pool:
            ends = list(pool.map(lambda r: wait_status(clients[1], r, "completed", "failed")["status"], ids))
        listed = [c.get("/v1/runs", params={"status": "completed", "limit": 1000}).json() for c in clients]
    finally:
        for client in clients:
            client.close()
    assert ends == ["completed"] * RUNS
    for page in listed:  # both instances list every run
        assert set(ids) <= {r["id"] for r in page["runs"]}
    resumed = set()
    for run_id in ids:
        events = check_completed_once(stack.runs / run_id)
        if any(e["type"] == "run_resumed" for e in events):
            resumed.add(run_id)
    assert held in resumed  # taken over from the killed worker
    asked = steps_asked(stack.server.requests[before:])
    assert asked[(f"Question: number 5 of {stack.wire}", 1)] == 2  # the call in flight, sent again once
    assert all(n <= 2 for n in asked.values())
    # a step asked twice was in flight at the kill: its run was taken over (resumed)
    twice = {task for (task, _), n in asked.items() if n > 1}
    assert twice <= {f"Question: number {ids.index(r)} of {stack.wire}" for r in resumed}, twice
    takers = {w.id for w in [victim, *stack.workers] for r in ids if w.took(r)}
    assert len(takers) >= 3  # the runs spread over the workers


def test_a_worker_killed_in_a_tool_call_leaves_the_call_unrepeated(stack: Stack) -> None:
    with stack.apis[0].client() as http:
        run_id = start_run(http, "slow")
        folder = stack.runs / run_id
        assert wait_for(lambda: (folder / "started.mark").exists())  # the shell runs
        stack.kill(stack.holder(run_id))
        (folder / "go.mark").touch()
        done = wait_status(http, run_id, "completed", "failed")
    assert done["status"] == "completed", done
    events = check_completed_once(folder)
    assert (folder / "ran.log").read_text() == "ran\n"  # the shell ran once
    (result,) = [e["result"] for e in events if e["type"] == "tool_result"]
    assert result["error"]["code"] == "EFFECT_UNKNOWN"  # the agent is told, the call not run again


def test_a_server_killed_its_clients_stream_goes_on_at_the_other(stack: Stack) -> None:
    arm(stack.answers, "streamed", 1)
    first, second = stack.apis
    with first.client() as http:
        run_id = start_run(http, "qa", question=f"streamed over {stack.wire}")
        assert stack.answers.holding.wait(120)
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


def test_flowrun_workers_shows_the_three_workers(stack: Stack) -> None:
    from support.cli import run_cli

    shown = run_cli(["workers", "--queue", stack.url, "--runs-dir", str(stack.runs)], cwd=stack.root)
    assert shown.returncode == 0, shown.stderr
    assert all(w.id in shown.stdout for w in stack.workers), shown.stdout
    with httpx.Client(base_url=stack.apis[1].base) as http:
        rows = http.get("/v1/workers").json()["workers"]
    assert {w.id for w in stack.workers} <= {row["id"] for row in rows}
