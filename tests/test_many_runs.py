"""Many runs in one process: 200 runs at once through the Python API on one event loop, against
the scripted wire server in a process of its own (so every descriptor and thread counted here is
the runs'). Every run folder's log is whole and strict, each run held its folder's lock while it
ran and gave it back, no thread was started per run, and the process's open descriptors are back
to what they were once the loop is closed. Nothing is timed (bench/many_runs.py measures)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support.paths import REPO
from support.project import write_files
from support.wire_server import Reply, Script, ToolCallSpec, WireRequest, WireServer

import flowrun
from flowrun.events import Event, RunStartEvent
from flowrun.runtime.durable.event_log import read_events
from flowrun.runtime.durable.runs_index import INDEX_NAME

RUNS = 200
WORKFLOW = """\
version: 1
kind: workflow
name: many
inputs:
  question: {description: the question}
models:
  m: {provider: openai-compatible, base_url: BASE_URL, model: m, stream: false, api_key_env: K}
default_model: m
entry: answerer
task: "Question: {{ question }}"
"""
AGENT = "version: 1\nkind: agent\nname: answerer\nprompt: You answer questions.\ntools: [write_file]\n"
SCRIPT = {
    "agents": {
        "answerer": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "answer.md", "content": "42\n"}}]},
            {"text": "answered"},
        ]
    },
    "match": {"answerer": "You answer questions"},
}


def open_fds() -> set[str]:
    """This process's open descriptors, but the runs index's: its one connection (the database,
    its WAL and shared memory) is kept open for the next run's update, one per runs folder."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # (the listing's own descriptor, closed already)
            continue
        if not os.path.basename(target).startswith(INDEX_NAME):
            found.add(fd)
    return found


def test_two_hundred_runs_at_once_on_one_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    server = subprocess.Popen(
        [
            sys.executable,
            str(REPO / "tests" / "support" / "wire_server.py"),
            "--script",
            str(tmp_path / "script.json"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        write_files(
            tmp_path, {"agents.d/answerer.yaml": AGENT, "wf.yaml": WORKFLOW.replace("BASE_URL", url + "/v1")}
        )
        monkeypatch.setenv("K", "test-key-1234")
        workflow = flowrun.load(tmp_path / "wf.yaml")
        runs = tmp_path / "runs"
        before_fds, before_threads = open_fds(), threading.active_count()
        most_threads = 0
        lock_owners: dict[str, str] = {}

        def on_event(event: Event) -> None:
            nonlocal most_threads
            most_threads = max(most_threads, threading.active_count())
            if isinstance(event, RunStartEvent):  # the run holds its folder's lock as it starts
                lock_owners[event.run_id] = (runs / event.run_id / "run.lock").read_text().strip()

        async def many() -> list[flowrun.RunResult]:
            return await asyncio.gather(
                *(
                    workflow.run({"question": f"q{i}"}, runs_dir=runs, run_id=f"r{i}", on_event=on_event)
                    for i in range(RUNS)
                )
            )

        results = asyncio.run(many())
        after_fds = open_fds()
    finally:
        server.terminate()
        server.wait()
        if server.stdout is not None:
            server.stdout.close()

    assert [r.status for r in results] == ["completed"] * RUNS
    assert lock_owners == {f"r{i}": str(os.getpid()) for i in range(RUNS)}
    for i in range(RUNS):
        run_dir = runs / f"r{i}"
        events = read_events(run_dir / "events.jsonl", strict=True)  # whole lines, seq 1, 2, ...
        kinds = [e.type for e in events]
        assert kinds[0] == "run_start" and kinds[-1] == "run_end", (i, kinds)
        assert kinds.count("model_response") == 2 and kinds.count("run_end") == 1, (i, kinds)
        assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
        assert (run_dir / "answer.md").read_text() == "42\n"
        assert not (run_dir / "run.lock").exists()  # given back
    # no thread per run: the loop's default executor (bounded) and the SDK's import at most
    assert most_threads - before_threads <= 40 < RUNS, most_threads
    assert after_fds == before_fds, sorted(after_fds ^ before_fds)


TOGETHER = 24  # runs held open at once: 5 descriptors or more each, well over LOW_LIMIT
LOW_LIMIT = 64
CHILD = """\
import asyncio, json, resource, sys
_, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[3]), hard))  # a low default, as many systems have
import flowrun
workflow = flowrun.load(sys.argv[1])
async def many():
    n, runs_dir = int(sys.argv[4]), sys.argv[2]
    runs = (workflow.run({"question": f"q{i}"}, runs_dir=runs_dir, run_id=f"r{i}") for i in range(n))
    return await asyncio.gather(*runs, return_exceptions=True)
results = asyncio.run(many())
print(json.dumps({"statuses": [getattr(r, "status", repr(r)) for r in results],
                  "soft": resource.getrlimit(resource.RLIMIT_NOFILE)[0]}))
"""


class Together:
    """The script's replies, the first of each run held until `n` runs have asked: that many
    runs are then open at once, whatever the machine's speed."""

    def __init__(self, n: int) -> None:
        self.script = Script(
            {
                "answerer": [
                    Reply(tool_calls=[ToolCallSpec("write_file", {"path": "a.md", "content": "42\n"})])
                ]
            },
            {"answerer": "You answer questions"},
        )
        self.barrier = threading.Barrier(n)

    def __call__(self, request: WireRequest) -> Reply:
        if request.assistant_turns == 0:
            self.barrier.wait(timeout=60)
        return self.script(request)


def test_runs_at_once_past_a_low_open_files_limit(tmp_path: Path) -> None:
    """A process started with a soft limit of 64 open files (many systems give 1,024, which
    stopped about 170 runs at once) runs 24 at once: the first run raised the limit."""
    with WireServer(Together(TOGETHER)) as server:
        write_files(
            tmp_path,
            {
                "agents.d/answerer.yaml": AGENT,
                "wf.yaml": WORKFLOW.replace("BASE_URL", server.openai_base_url),
            },
        )
        argv = [str(tmp_path / "wf.yaml"), str(tmp_path / "runs"), str(LOW_LIMIT), str(TOGETHER)]
        env = {**os.environ, "K": "test-key-1234"}
        done = subprocess.run(
            [sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, env=env, timeout=300
        )
        assert server.max_in_flight >= TOGETHER
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["statuses"] == ["completed"] * TOGETHER, report
    assert report["soft"] > LOW_LIMIT
