"""The local backend over worker processes (`--processes N`, batch/processes.py and
batch/worker.py), through the command line and `flowrun.run_batch`, with real worker processes
and the real `openai` and `anthropic` SDKs against the scripted wire server: items spread over
two workers (the run folder's lock names the process that runs it), a rate limit shared across
them, the batch's budget stopping every worker, a worker killed in the middle, Ctrl-C to the
whole process group, the parent killed, a workflow that no longer loads, workers that cannot
start, and the option's mistakes. These tests start several processes each, so they share one
xdist group (one at a time)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import pty
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.cli import flowrun_cmd, popen_cli, run_cli
from support.env import WIRES, clean_env
from support.procs import DEADLINE_S, wait_for
from support.project import write_files
from support.runs import folders, live_events
from support.wire_server import WireRequest, WireServer
from test_batch import (
    AGENT,
    CALL_COST,
    EXACT,
    PRICE,
    WORKFLOW,
    BookedStarts,
    Held,
    answerer,
    burst_ok,
    ended_items,
    held_on_the_wire,
    make_project,
    question_of,
    results,
    waited_their_turn,
    write_items,
)

import flowrun
from flowrun.batch import processes
from flowrun.batch.forked import FORK_ENV, WORKER_NAME
from flowrun.errors import FlowrunError, UsageError
from flowrun.tools import sandbox

pytestmark = pytest.mark.xdist_group("batch_processes")

WORKER_MODULE = "flowrun.batch.worker"


# ---------------------------------------------------------------- seeing processes


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting to be reaped)."""
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def is_worker(pid: int) -> bool:
    """A batch worker: forked from the batch (named flowrun-worker) or a fresh interpreter."""
    return comm(pid) == WORKER_NAME.decode() or WORKER_MODULE in cmdline(pid)


def pipes_of(pid: int) -> set[str]:
    """The pipes a process has open (their inodes, as /proc shows them: `pipe:[N]`)."""
    found = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("pipe:"):
                found.add(target)
    return found


def parent_of(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[1]) if fields is not None else None


def workers_of(parent: int) -> set[int]:
    """The live worker processes `parent` started."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            pid = int(entry.name)
            if parent_of(pid) == parent and is_worker(pid) and alive(pid):
                found.add(pid)
    return found


def lock_owners(out: Path) -> dict[int, tuple[int | None, str]]:
    """The processes that hold the run folders' locks now: pid -> (its parent, its name and command line).
    A run's lock holds the pid of the process that runs it (runtime/durable/run_folder.py)."""
    owners = {}
    for lock in (out / "runs").glob("*/run.lock"):
        try:
            pid = int(lock.read_text().strip())
        except (OSError, ValueError):
            continue
        owners[pid] = (parent_of(pid), f"{comm(pid)} {cmdline(pid)}")
    return owners


def watching(out: Path, inner: Callable[[WireRequest], Any], seen: dict[int, tuple[int | None, str]]) -> Any:
    """`inner`, noting at every request which processes run the batch's items."""

    def respond(request: WireRequest) -> Any:
        seen.update(lock_owners(out))
        return inner(request)

    return respond


# ---------------------------------------------------------------- batches


def project_without_server(folder: Path) -> Path:
    """The test project, pointing at a port nothing listens on (for runs that never call)."""
    text = WORKFLOW.replace("BASE_URL", "http://127.0.0.1:9/v1").replace("PRICE", PRICE)
    files = {"qa.yaml": text.replace("    RATE_LIMIT\n", ""), "agents.d/answerer.yaml": AGENT}
    return write_files(folder, files) / "qa.yaml"


QUESTIONS = [f"q{i}" for i in range(16)]
FREE = 6  # the items answered at once; the others are held mid-call until the test releases them


def held_questions() -> Held:
    return Held(answerer(delay_s=0.05), lambda q: q not in QUESTIONS[:FREE])


def start_two_workers(
    server: WireServer, held: Held, tmp_path: Path
) -> tuple[subprocess.Popen[str], list[str], Path]:
    """`flowrun batch` of 16 items over 2 worker processes (2 slots each), once the first 6
    items ended and the next 4 are running, 2 in each worker, each asking the model (held
    there): the process, its arguments (to run it again) and the batch folder. Every worker
    has run items, so it set its signal handling long ago; items remain, so the batch cannot
    end before the test acts (release `held` once it has)."""
    workflow = make_project(tmp_path / "p", server)
    items = write_items(tmp_path / "items.jsonl", QUESTIONS)
    out = tmp_path / "out"
    args = ["batch", str(workflow), str(items), "--out", str(out), "-c", "4", "--processes", "2", "-q"]
    proc = popen_cli(args, tmp_path, new_session=True)

    def four_held_in_two_workers() -> bool:
        owners = [parent for parent, _ in lock_owners(out).values()]
        return (
            ended_items(out) == FREE
            and len(held_on_the_wire(server, held.held)) == 4
            and len(workers_of(proc.pid)) == 2
            and owners.count(proc.pid) == 2
        )

    assert wait_for(lambda: four_held_in_two_workers() or proc.poll() is not None), proc.poll()
    assert proc.poll() is None, proc.communicate()
    return proc, args, out


def recorded_steps(out: Path) -> set[tuple[str, int]]:
    """(question, model call) of every model answer the batch's run folders recorded."""
    recorded: set[tuple[str, int]] = set()
    for run_dir in folders(out / "runs"):
        events = live_events(run_dir)
        start = next((e for e in events if e["type"] == "run_start"), None)
        if start is not None:
            question = start["inputs"]["question"]
            recorded |= {(question, e["step"]) for e in events if e["type"] == "model_response"}
    return recorded


def assert_rerun_completes(
    server: WireServer, args: list[str], cwd: Path, out: Path, total: int
) -> list[WireRequest]:
    """Run the same batch again: every item completes, and no recorded step is asked again."""
    recorded = recorded_steps(out)
    before = len(server.requests)
    again = run_cli(args, cwd=cwd)
    assert again.returncode == 0, again.stderr
    assert f"{total} items: {total} completed, 0 failed" in again.stdout
    later = server.requests[before:]
    for request in later:  # model call n of a run is its n-th request (assistant turns + 1)
        assert (question_of(request), request.assistant_turns + 1) not in recorded
    lines = results(out)
    assert len(lines) == total and all(r["status"] == "completed" for r in lines)
    for line in lines:
        assert (out / line["output"]).read_text().startswith("Answer to: q")
    return later


# ---------------------------------------------------------------- items over two processes


@pytest.mark.parametrize("start", ["fork", "exec"])
def test_items_run_in_two_worker_processes_through_the_cli(tmp_path: Path, start: str) -> None:
    """The workers are forked from the command (named flowrun-worker, with nothing to import),
    or fresh interpreters with FLOWRUN_BATCH_FORK=0; either way the same results."""
    out = tmp_path / "out"
    seen: dict[int, tuple[int | None, str]] = {}
    with WireServer(watching(out, answerer(delay_s=0.05), seen)) as server:
        workflow = make_project(tmp_path / "p", server)
        questions = [f"q{i}" for i in range(24)]
        items = write_items(tmp_path / "items.jsonl", questions)
        args = ["batch", str(workflow), str(items), "--out", str(out), "-c", "4", "--processes", "2"]
        proc = popen_cli(args, tmp_path, {FORK_ENV: "1" if start == "fork" else "0"}, new_session=True)
        stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert "24 items: 24 completed, 0 failed (24 run now)" in stdout
    assert "cost $0.9600" in stdout and "Traceback" not in stderr
    lines = results(out)
    assert len(lines) == 24 and len({r["id"] for r in lines}) == 24
    for question, line in zip(questions, lines, strict=True):  # in the order of the items file
        assert line["status"] == "completed" and line["error"] is None
        assert line["input_tokens"] == 20 and line["output_tokens"] == 10 and line["total_tokens"] == 30
        assert line["cost_usd"] == pytest.approx(2 * CALL_COST) and line["duration_s"] > 0
        assert (out / line["output"]).read_text() == f"Answer to: {question}\n"
        meta = json.loads((out / line["run_dir"] / "run.json").read_text())
        assert meta["status"] == "completed" and meta["inputs"] == {"question": question, "level": 1}
    assert sorted(question_of(r) for r in server.requests) == sorted(questions * 2)
    # the items ran in two processes the command started, both workers, neither the command
    assert len(seen) == 2, seen
    for pid, (parent, command) in seen.items():
        assert pid != proc.pid and parent == proc.pid
        if start == "fork":
            assert command.startswith(f"{WORKER_NAME.decode()} ") and WORKER_MODULE not in command
        else:
            assert WORKER_MODULE in command
    assert json.loads((out / "batch.json").read_text())["options"]["processes"] == 2
    assert not (out / "workers.log").exists()  # the workers had nothing to say


def test_workers_are_forked_at_a_terminal_too(tmp_path: Path) -> None:
    """At a terminal the progress bar (and its refresh thread) starts at the first update, once
    the workers are forked: a thread before the forks would make them fresh interpreters."""
    out = tmp_path / "out"
    seen: dict[int, tuple[int | None, str]] = {}
    shown: list[bytes] = []
    with WireServer(watching(out, answerer(delay_s=0.05), seen)) as server:
        workflow = make_project(tmp_path / "p", server)
        items = write_items(tmp_path / "items.jsonl", [f"q{i}" for i in range(8)])
        primary, secondary = pty.openpty()
        args = ["batch", str(workflow), str(items), "--out", str(out), "-c", "4", "--processes", "2"]
        proc = subprocess.Popen(
            [*flowrun_cmd(), *args],
            cwd=tmp_path,
            env=clean_env({"TERM": "xterm", "COLUMNS": "100"}),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=secondary,
        )
        os.close(secondary)
        reader = threading.Thread(target=drain, args=(primary, shown), daemon=True)
        reader.start()
        stdout, _ = proc.communicate(timeout=120)
        reader.join(timeout=DEADLINE_S)
        os.close(primary)
    assert proc.returncode == 0, b"".join(shown)
    assert b"8 items: 8 completed" in stdout
    assert b"batch" in b"".join(shown) and b"8/8" in b"".join(shown)  # the bar was drawn
    assert len(seen) == 2 and all(command.startswith(WORKER_NAME.decode()) for _, command in seen.values())


PROGRAM = """\
import asyncio, atexit, sys
import flowrun
atexit.register(lambda: print("the program's exit handler"))
workflow = flowrun.load(sys.argv[1])  # its SDK's import starts in a thread (the head start)
batch = flowrun.run_batch(workflow, sys.argv[2], out=sys.argv[3], concurrency=4, processes=2)
summary = asyncio.run(batch)
print(summary.status, summary.completed)
"""


def test_workers_forked_from_a_program_leave_its_exit_handlers_to_it(tmp_path: Path) -> None:
    """A program of yours calling `flowrun.run_batch` (no thread of its own; the head start's
    import thread, which `flowrun.load` started, is waited for): its workers are forked from it
    and do not run its exit handlers (they would print into workers.log); it runs its own, once."""
    out = tmp_path / "out"
    seen: dict[int, tuple[int | None, str]] = {}
    with WireServer(watching(out, answerer(delay_s=0.05), seen)) as server:
        workflow = make_project(tmp_path / "p", server)
        items = write_items(tmp_path / "items.jsonl", [f"q{i}" for i in range(8)])
        argv = [sys.executable, "-c", PROGRAM, str(workflow), str(items), str(out)]
        done = subprocess.run(
            argv, cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=120
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["completed 8", "the program's exit handler"]
    assert len(seen) == 2 and all(command.startswith(WORKER_NAME.decode()) for _, command in seen.values())
    assert not any(alive(pid) for pid in seen)
    assert not (out / "workers.log").exists()  # nothing of the program's ran in a worker


INTERRUPTED_FORK = """\
import asyncio, os, sys
from pathlib import Path
import flowrun

def refuse(*args, **kwargs):  # a cancel that lands while a forked worker's pipes are connected
    raise asyncio.CancelledError

asyncio.base_events.BaseEventLoop.connect_read_pipe = refuse
fds = len(os.listdir("/proc/self/fd"))
batch = flowrun.run_batch(sys.argv[1], sys.argv[2], out="out", concurrency=4, processes=2, dry_run=True)
try:
    asyncio.run(batch)
except BaseException as e:
    print(type(e).__name__)
children = [c for t in Path("/proc/self/task").iterdir() for c in (t / "children").read_text().split()]
print(children, len(os.listdir("/proc/self/fd")) - fds)
"""


def test_a_fork_interrupted_before_its_pipes_are_ready_leaves_no_worker(tmp_path: Path) -> None:
    """Cancelled between the fork and the worker's pipes on the loop: the child is killed and
    reaped (no worker waits forever on an input nobody closes, no zombie), no pipe is left open."""
    workflow = project_without_server(tmp_path)
    items = write_items(tmp_path / "items.jsonl", ["a", "b"])
    argv = [sys.executable, "-c", INTERRUPTED_FORK, str(workflow), str(items)]
    done = subprocess.run(argv, cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["CancelledError", "[] 0"], done.stdout + done.stderr


def drain(fd: int, into: list[bytes]) -> None:
    """Read a pty until its other side is closed (EIO), so the writer never blocks."""
    with contextlib.suppress(OSError):
        while chunk := os.read(fd, 65536):
            into.append(chunk)


def test_a_small_batch_stays_in_the_process_by_default(tmp_path: Path) -> None:
    """`auto` with the default concurrency (4): no worker; the command's own process runs
    the items (the observation above can tell the two apart)."""
    out = tmp_path / "out"
    seen: dict[int, tuple[int | None, str]] = {}
    with WireServer(watching(out, answerer(delay_s=0.05), seen)) as server:
        workflow = make_project(tmp_path / "p", server)
        items = write_items(tmp_path / "items.jsonl", [f"q{i}" for i in range(4)])
        proc = popen_cli(["batch", str(workflow), str(items), "--out", str(out)], tmp_path, new_session=True)
        _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert set(seen) == {proc.pid}
    assert json.loads((out / "batch.json").read_text())["options"]["processes"] == "auto"


ANTHROPIC_MODEL = """\
models:
  m:
    provider: anthropic
    base_url: BASE_URL
    api_key_env: TEST_ANTHROPIC_KEY
    model: m
    stream: true
    price: PRICE
    rate_limit: {requests_per_minute: 120}
default_model: m
"""


@pytest.mark.parametrize("wire", WIRES)
def test_a_rate_limit_is_shared_across_worker_processes(
    tmp_path: Path, wire: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    seen: dict[int, tuple[int | None, str]] = {}
    book = BookedStarts()  # the command's one book, which answers every worker
    monkeypatch.setattr(processes, "LocalBook", lambda: book)
    with WireServer(watching(out, answerer(), seen)) as server:
        workflow = make_project(tmp_path / "p", server, rate_limit="{requests_per_minute: 120}")
        if wire == "anthropic":  # the same workflow on the Anthropic wire format, streamed
            monkeypatch.setenv("TEST_ANTHROPIC_KEY", "test-key")
            text = workflow.read_text()
            head, _, tail = text.partition("models:\n")
            models = ANTHROPIC_MODEL.replace("BASE_URL", server.anthropic_base_url).replace("PRICE", PRICE)
            workflow.write_text(head + models + tail.split("default_model: m\n", 1)[1])
        items = write_items(tmp_path / "items.jsonl", [f"q{i}" for i in range(6)])
        summary = asyncio.run(flowrun.run_batch(workflow, items, out=out, concurrency=4, processes=2))
        times = [r.received for r in server.requests]
        paths = {r.path for r in server.requests}
    assert summary.ok and summary.completed == 6 and summary.processes == 2, summary
    assert summary.cost_usd == pytest.approx(6 * 2 * CALL_COST)
    assert paths == ({"/v1/messages"} if wire == "anthropic" else {"/v1/chat/completions"})
    assert len(seen) == 2 and os.getpid() not in seen
    starts = book.starts
    shown = [round(s - min(starts), 3) for s in sorted(starts)]
    # 2 at once, then one every 0.5 s, whichever process asks; and no call went out early
    assert len(times) == 12 and burst_ok(starts, 120, jitter_s=EXACT), shown
    assert max(starts) - min(starts) >= (12 - 2) * 0.5 - EXACT, shown
    assert waited_their_turn(times, starts)


TASK = 'Question: {{ question }} (level {{ level }})\nit\'s "quoted" \\n'  # no YAML reads its repr back


@pytest.mark.parametrize(
    "overrides",
    [
        ["models.m.model=other-model"],  # as --set gives them
        {"models.m.model": "other-model"},  # a mapping whose texts read back the same
        {"models.m.model": "other-model", "task": TASK},  # and one whose texts do not
    ],
)
def test_the_workers_load_the_workflow_with_its_overrides(tmp_path: Path, overrides: Any) -> None:
    with WireServer(answerer()) as server:
        workflow = make_project(tmp_path / "p", server)
        items = write_items(tmp_path / "items.jsonl", ["a", "b", "c", "d"])
        wf = flowrun.load(workflow, overrides)
        out = tmp_path / "out"
        summary = asyncio.run(flowrun.run_batch(wf, items, out=out, concurrency=2, processes=2))
        assert summary.ok and summary.processes == 2
        for line in results(out):
            meta = json.loads((out / line["run_dir"] / "run.json").read_text())
            assert meta["options"]["overrides"] == [
                o.text for o in wf.overrides
            ]  # as an in-process run records them
        assert {r.body["model"] for r in server.requests} == {"other-model"}
        assert len(server.requests) == 8
        if "task" in overrides:
            for request in server.requests:
                assert request.last_user_text.endswith('\nit\'s "quoted" \\n')


# ---------------------------------------------------------------- the batch's budget


class AnswersFirst:
    """Answers like `inner` the first `count` requests; the later ones wait until `release()`
    (they come after the budget was reached: the items asking them are stopped meanwhile)."""

    def __init__(self, inner: Callable[[WireRequest], Any], count: int) -> None:
        self.inner = inner
        self.count = count
        self.seen = 0
        self.lock = threading.Lock()
        self.released = threading.Event()

    def __call__(self, request: WireRequest) -> Any:
        with self.lock:
            self.seen += 1
            late = self.seen > self.count
        if late:
            self.released.wait(DEADLINE_S)
        return self.inner(request)

    def release(self) -> None:
        self.released.set()


def test_the_total_budget_stops_every_worker_and_a_rerun_resumes(tmp_path: Path) -> None:
    # five answered calls cost the budget ($0.1): an item with one of its two calls answered
    # is running when it is reached (its second waits), so something is always stopped
    responder = AnswersFirst(answerer(), 5)
    with WireServer(responder) as server:
        workflow = make_project(tmp_path / "p", server)
        items = write_items(tmp_path / "items.jsonl", [f"q{i}" for i in range(8)])
        out = tmp_path / "out"
        base = ["batch", str(workflow), str(items), "--out", str(out), "-c", "2", "--processes", "2"]
        try:
            proc = run_cli([*base, "--max-cost-usd", "0.1"], cwd=tmp_path)
        finally:
            responder.release()
        assert proc.returncode == 4, proc.stderr
        assert "max_cost_usd ($0.1) was reached" in proc.stderr
        lines = results(out)
        by_status = {s: [r for r in lines if r["status"] == s] for s in ("completed", "cancelled")}
        assert by_status["completed"] and by_status["cancelled"], lines
        ran = len(by_status["completed"]) + len(by_status["cancelled"])
        assert ran == len(lines) < 8  # the others never started
        for line in by_status["cancelled"]:
            # stopped resumably; an item whose own last call reached the budget may have been
            # stopped as its run was closing, after it recorded `completed` (the rerun reads it)
            status = json.loads((out / line["run_dir"] / "run.json").read_text())["status"]
            assert status in ("cancelled", "completed")
        assert len(server.requests) <= 2 * len(lines)
        later = assert_rerun_completes(server, [*base, "--max-cost-usd", "1"], tmp_path, out, 8)
    asked_again = {question_of(r) for r in later}
    for line in by_status["completed"]:
        question = json.loads((out / line["run_dir"] / "run.json").read_text())["inputs"]["question"]
        assert question not in asked_again  # no completed item ran again


# ---------------------------------------------------------------- stopped before a run began

GATED_BWRAP = """#!/bin/bash
# the sandbox's bwrap, once the test lets it start (a run checks the sandbox before its folder exists)
touch GATE/probing.$$
while [ ! -e GATE/go ]; do sleep 0.05; done
exec REAL "$@"
"""


def gated_bwrap(tmp_path: Path) -> tuple[Path, Path]:
    """A bwrap that waits for GATE/go, writing GATE/probing.PID meanwhile: (it, GATE)."""
    real, why = sandbox.find_bwrap()
    assert real is not None, why
    gate = tmp_path / "gate"
    gate.mkdir()
    fake = tmp_path / "bwrap"
    fake.write_text(GATED_BWRAP.replace("GATE", str(gate)).replace("REAL", real))
    fake.chmod(0o755)
    return fake, gate


def pipes(pid: int, mode: int | None = None) -> set[str]:
    """The pipes a process has open ("pipe:[inode]"), only those open for `mode` if given."""
    found = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                info = Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text()
                flags = int(info.split("flags:", 1)[1].split()[0], 8)
                if target.startswith("pipe:") and (mode is None or flags & os.O_ACCMODE == mode):
                    found.add(target)
    return found


def inputs_ended(parent: int, workers: set[int]) -> bool:
    """Whether the parent has ended every worker's input (after its `stop`, batch/processes.py):
    no pipe a worker reads from is still open in the parent."""
    return not any(pipes(pid, os.O_RDONLY) & pipes(parent) for pid in workers)


@pytest.mark.parametrize("processes", ["1", "2"])
def test_ctrl_c_before_the_runs_began_leaves_the_items_not_started(tmp_path: Path, processes: str) -> None:
    """Ctrl-C while the items just handed out check the sandbox, before their run folders
    exist: nothing began, so results.jsonl gets no line (no run_dir without a run.json) and
    the next run starts every item afresh. In this process, or in two workers (told to stop
    before they go on)."""
    fake, gate = gated_bwrap(tmp_path)
    with WireServer(answerer()) as server:
        workflow = make_project(tmp_path / "p", server)
        tools = "tools: [write_file, execute_shell]\n"  # a tool that starts processes: a sandbox check
        agent = tmp_path / "p" / "agents.d" / "answerer.yaml"
        agent.write_text(agent.read_text().replace("tools: [write_file]\n", tools))
        items = write_items(tmp_path / "items.jsonl", ["a", "b", "c"])
        out = tmp_path / "out"
        args = ["batch", str(workflow), str(items), "--out", str(out), "-c", "2", "--processes", processes]
        env = {sandbox.BWRAP_ENV: str(fake)}
        proc = popen_cli([*args, "-q"], tmp_path, env, new_session=True)
        try:  # every process that runs items is checking the sandbox for its first item
            probing = int(processes)
            assert wait_for(lambda: len(list(gate.glob("probing.*"))) == probing or proc.poll() is not None)
            assert proc.poll() is None, proc.communicate()
            workers = workers_of(proc.pid)
            assert len(workers) == (2 if processes == "2" else 0)
            os.killpg(proc.pid, signal.SIGINT)  # as a terminal sends Ctrl-C
            assert wait_for(lambda: inputs_ended(proc.pid, workers) or proc.poll() is not None)
        finally:
            (gate / "go").touch()
        stdout, stderr = proc.communicate(timeout=DEADLINE_S)
        assert proc.returncode == 130, (stdout, stderr)
        assert "error: cancelled (Ctrl-C)" in stderr and "Traceback" not in stderr
        assert not server.requests  # no run began
        lines = results(out) if (out / "results.jsonl").exists() else []
        assert lines == [], [line["error"] for line in lines]
        assert not list((out / "runs").glob("*/run.json"))
        assert json.loads((out / "batch.json").read_text())["status"] == "cancelled"
        again = run_cli(args, cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr
    assert "3 items: 3 completed, 0 failed (3 run now)" in again.stdout
    for line in results(out):
        kinds = [e["type"] for e in live_events(out / line["run_dir"])]
        assert kinds.count("run_start") == 1 and "run_resumed" not in kinds  # each started afresh


# ---------------------------------------------------------------- faults


def test_a_killed_worker_loses_only_its_running_items(tmp_path: Path) -> None:
    held = held_questions()
    with WireServer(held) as server:
        proc, args, out = start_two_workers(server, held, tmp_path)
        first = workers_of(proc.pid)
        victim = min(first)
        try:
            os.kill(victim, signal.SIGKILL)
            # a new worker takes its place while items remain
            assert wait_for(lambda: bool(workers_of(proc.pid) - first) or proc.poll() is not None)
            replaced = bool(workers_of(proc.pid) - first)
            # each worker holds its own pipes only: a later fork closed the others' (a worker
            # sees the end of its input only once every copy of its writing end is closed)
            now = sorted(workers_of(proc.pid))
            shared = [pipes_of(a) & pipes_of(b) for a, b in itertools.combinations(now, 2)]
        finally:
            held.release()
        stdout, stderr = proc.communicate(timeout=DEADLINE_S)
        assert replaced, (stdout, stderr)
        assert len(now) == 2 and shared == [set()], (now, shared)
        assert all(comm(pid) == WORKER_NAME.decode() for pid in {*first, *now} if alive(pid))
        assert proc.returncode == 130, stderr  # some items were interrupted
        lost = [r for r in results(out) if r["status"] == "interrupted"]
        assert len(lost) == 2 and "2 stopped" in stdout, stdout  # the two it was running
        for line in lost:
            assert f"(pid {victim}) was killed by SIGKILL" in line["error"]
            assert "running the same batch again resumes it" in line["error"]
        assert sum(r["status"] == "completed" for r in results(out)) == 16 - len(lost)
        assert not any(alive(pid) for pid in first)
        assert_rerun_completes(server, args, tmp_path, out, 16)


@pytest.mark.parametrize(
    ("signum", "code", "said"),
    [(signal.SIGINT, 130, "error: cancelled (Ctrl-C)"), (signal.SIGTERM, 143, "error: cancelled (SIGTERM)")],
)
def test_ctrl_c_or_sigterm_stops_the_workers(tmp_path: Path, signum: int, code: int, said: str) -> None:
    """Ctrl-C reaches the whole process group, as a terminal sends it; SIGTERM only the command.
    It comes while each worker runs two items (asking the model): those four end `cancelled`."""
    held = held_questions()
    with WireServer(held) as server:
        proc, args, out = start_two_workers(server, held, tmp_path)
        workers = workers_of(proc.pid)
        try:
            if signum == signal.SIGINT:
                os.killpg(proc.pid, signum)  # every process of the group
            else:
                proc.send_signal(signum)
            _, stderr = proc.communicate(timeout=DEADLINE_S)
        finally:
            held.release()
        assert proc.returncode == code, stderr
        assert said in stderr and "run the same command again" in stderr
        assert "Traceback" not in stderr
        assert not any(alive(pid) for pid in workers)  # none left behind
        lines = results(out)
        stopped = [r for r in lines if r["status"] == "cancelled"]
        assert len(stopped) == 4 and len(lines) == FREE + 4, lines  # the others never started
        for line in stopped:
            assert json.loads((out / line["run_dir"] / "run.json").read_text())["status"] == "cancelled"
        assert json.loads((out / "batch.json").read_text())["status"] == "cancelled"
        assert_rerun_completes(server, args, tmp_path, out, 16)


def test_workers_of_a_killed_parent_stop_their_runs_and_exit(tmp_path: Path) -> None:
    held = held_questions()
    with WireServer(held) as server:
        proc, args, out = start_two_workers(server, held, tmp_path)
        workers = workers_of(proc.pid)
        running = {lock.parent for lock in (out / "runs").glob("*/run.lock")}
        try:
            proc.kill()  # the parent only
            proc.communicate(timeout=DEADLINE_S)
            assert wait_for(lambda: not any(alive(pid) for pid in workers))  # they saw their input end
        finally:
            held.release()
        assert len(running) == 4
        for run_dir in running:  # the runs they had stopped resumably, not killed
            meta = json.loads((run_dir / "run.json").read_text())
            assert meta["status"] == "cancelled", meta
        assert_rerun_completes(server, args, tmp_path, out, 16)


def test_a_workflow_that_no_longer_loads_stops_the_batch_with_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with WireServer(answerer()) as server:
        workflow = make_project(tmp_path / "p", server)
        wf = flowrun.load(workflow)
        workflow.write_text(workflow.read_text().replace("entry: answerer", "entry: nobody"))
        # fresh interpreters load the file again (forked workers run the workflow as loaded)
        monkeypatch.setenv(FORK_ENV, "0")
        items = write_items(tmp_path / "items.jsonl", ["a", "b", "c"])
        out = tmp_path / "out"
        with pytest.raises(FlowrunError) as caught:
            asyncio.run(flowrun.run_batch(wf, items, out=out, concurrency=2, processes=2))
        assert not server.requests
    message = str(caught.value)
    assert message.startswith("a worker process could not load the workflow: ")
    assert "nobody" in message and "Traceback" not in message
    assert not (out / "results.jsonl").exists() or not results(out)  # no item started
    assert json.loads((out / "batch.json").read_text())["status"] == "cancelled"


def test_workers_that_cannot_start_end_the_batch_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broken environment: every worker's interpreter dies at start."""
    workflow = project_without_server(tmp_path)
    items = write_items(tmp_path / "items.jsonl", ["a", "b"])
    monkeypatch.setenv("PYTHONHOME", str(tmp_path / "no-such-python"))
    monkeypatch.setenv(FORK_ENV, "0")  # fresh interpreters (a forked worker has its Python already)
    started = time.monotonic()
    with pytest.raises(FlowrunError) as caught:
        asyncio.run(flowrun.run_batch(workflow, items, out=tmp_path / "out", concurrency=2, processes=2))
    message = str(caught.value)
    assert "worker processes keep dying (4 in a row" in message, message
    assert "exited with code 1 before it was ready" in message
    assert "workers.log" in message  # the hint: where their stderr went
    assert "encodings" in (tmp_path / "out" / "workers.log").read_text()
    assert time.monotonic() - started < 60
    monkeypatch.delenv("PYTHONHOME")  # the environment mended: the same batch runs in the same folder
    again = flowrun.run_batch(workflow, items, out=tmp_path / "out", concurrency=2, processes=2, dry_run=True)
    summary = asyncio.run(again)
    assert (summary.status, summary.completed) == ("completed", 2)


# ---------------------------------------------------------------- mistakes


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (["--processes", "0"], "--processes must be a whole number of at least 1, or auto; got 0"),
        (["--processes", "-2"], "got -2"),
        (["--processes", "1.5"], "got 1.5"),
        (["--processes", "many"], "got many"),
        (["--processes", "2", "--backend", "ray"], "--processes is for the local backend"),
    ],
)
def test_a_wrong_processes_value_is_one_line_and_a_hint(
    tmp_path: Path, given: list[str], message: str
) -> None:
    workflow = project_without_server(tmp_path)
    items = write_items(tmp_path / "items.jsonl", ["q"])
    out = tmp_path / "out"
    proc = run_cli(["batch", str(workflow), str(items), "--out", str(out), *given], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: ") and message in lines[0], lines
    assert lines[1].startswith("  hint: ")
    assert not out.exists()


def test_run_batch_checks_processes(tmp_path: Path) -> None:
    workflow = project_without_server(tmp_path)
    items = write_items(tmp_path / "items.jsonl", ["q"])
    for wrong in (0, -1, 2.5, True, "x"):
        with pytest.raises(UsageError, match="--processes must be a whole number"):
            asyncio.run(flowrun.run_batch(workflow, items, out=tmp_path / "out", processes=wrong))
    assert not (tmp_path / "out").exists()


def children() -> set[int]:
    """This process's child processes (every thread's)."""
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):
            found |= {int(pid) for pid in (task / "children").read_text().split()}
    return found


def test_workers_started_before_the_plan_are_closed_when_the_items_are_bad(tmp_path: Path) -> None:
    """The workers start before the items file is read; a bad item is still the one-line
    UsageError it was, and the workers started for nothing are gone when it is raised."""
    with WireServer(answerer()) as server:
        workflow = make_project(tmp_path / "p", server)
        items = tmp_path / "items.jsonl"
        items.write_text('{"question": "q1"}\n{"question": 5\n')
        before = children()
        with pytest.raises(UsageError, match="not JSON"):
            asyncio.run(flowrun.run_batch(workflow, items, out=tmp_path / "out", concurrency=4, processes=2))
        assert children() == before
        assert not (tmp_path / "out" / "runs").exists()  # nothing ran
        assert not server.requests


def test_auto_processes_uses_every_usable_cpu_of_a_small_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Up to 16 items at once stay in the batch process; beyond, a machine of at most 4 usable
    CPUs gets a worker per CPU, a bigger one a worker per 16 items (at most one per CPU). The
    CPUs a process may use cannot be changed here: the affinity is set for the rule."""
    for cpus, concurrency, wanted in [(2, 16, 1), (2, 17, 2), (2, 50, 2), (4, 20, 4), (1, 50, 1), (8, 20, 2)]:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid, n=cpus: set(range(n)))
        assert processes.auto_processes(concurrency) == wanted, (cpus, concurrency)
