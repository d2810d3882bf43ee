"""The queue's tests' kit: a project whose runs each make two model calls and one tool call
(`qa`), and one whose shell call blocks until the test lets it go (`slow`); `flowrun worker`
processes whose lines the tests wait for; an SSE reader that resumes with Last-Event-ID; and
the checks every queued run must pass (its log whole, completed exactly once, no model step
asked again but those in flight at a kill)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx

from support.cli import flowrun_cmd
from support.env import clean_env
from support.procs import kill_tree, wait_for
from support.project import agent, model, prompt_of, workflow, write_files
from support.served import TOKEN, Served
from support.wire_server import Reply, ToolCallSpec, WireRequest

SHELL = (
    "echo ran >> ran.log; touch started.mark; while [ ! -f go.mark ]; do sleep 0.05; done; "
    "echo ended >> ran.log"
)
__all__ = ["TOKEN"]


def queue_project(root: Path, wire: str, **model_keys: Any) -> list[Path]:
    """`qa` (the asker lists the folder, then answers the question), `slow` (the shell runs
    SHELL, then answers) and `gate` (a write_file that needs an approval), on `wire`'s
    provider (its model with `model_keys`)."""
    write_files(
        root,
        {
            "agents.d/asker.yaml": agent("asker", tools=["list_directory"]),
            "agents.d/sheller.yaml": agent("sheller", tools=["execute_shell"]),
            "qa.yaml": workflow(
                model(wire, **model_keys),
                name="qa",
                entry="asker",
                inputs={"question": {"description": "the question"}},
                task="Question: {{ question }}",
            ),
            "agents.d/gated.yaml": agent("gated", tools=[{"write_file": {"approve": "ask"}}]),
            "slow.yaml": workflow(
                model(wire, **model_keys),
                name="slow",
                entry="sheller",
                inputs={"question": {"description": "which run"}},
                task="Run it for {{ question }}.",
            ),
            "gate.yaml": workflow(model(wire, **model_keys), name="gate", entry="gated", task="Write it."),
        },
    )
    return [root / "qa.yaml", root / "slow.yaml", root / "gate.yaml"]


def task_of(request: WireRequest) -> str:
    """The text of the request's first user message (its task), in either wire format."""
    first = next((m for m in request.messages if m.get("role") == "user"), {})
    content = first.get("content")
    if isinstance(content, list):  # Anthropic's blocks
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content)


class Answers:
    """The replies, a pure function of the request (any worker may ask); a step `arm`ed waits
    at the server until `release` (its event set meanwhile): the run is in that model call as
    long as a test needs."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.holds: dict[tuple[str, int], threading.Event] = {}  # (a text of the task, turn)
        self.release = threading.Event()

    def arm(self, text: str, turn: int) -> threading.Event:
        """Hold the step (`turn` of a task containing `text`) until `release`; the event set
        when its request arrives."""
        self.release.clear()
        arrived = self.holds[(text, turn)] = threading.Event()
        return arrived

    def _hold(self, request: WireRequest) -> None:
        task, turn = task_of(request), request.assistant_turns
        for (text, held_turn), arrived in list(self.holds.items()):
            if text in task and turn == held_turn and not self.release.is_set():
                arrived.set()
                self.release.wait(120)

    def __call__(self, request: WireRequest) -> Reply:
        self._hold(request)
        turn = request.assistant_turns
        if prompt_of("gated") in request.system:
            if turn == 0:
                return Reply(tool_calls=[ToolCallSpec("write_file", {"path": "out.txt", "content": "ok\n"})])
            return Reply("Wrote it.")
        if prompt_of("sheller") in request.system:
            if turn == 0:
                return Reply(tool_calls=[ToolCallSpec("execute_shell", {"command": SHELL})])
            return Reply("Shell done.")
        if turn == 0:
            return Reply(tool_calls=[ToolCallSpec("list_directory", {"path": "."})], delay_s=self.delay_s)
        return Reply("Answer to " + task_of(request).removeprefix("Question: "), delay_s=self.delay_s)


class Worker:
    """`flowrun worker ARGS` in a subprocess; its stderr lines kept (`lines`)."""

    def __init__(self, cwd: Path, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [*flowrun_cmd(), "worker", *args],
            cwd=cwd,
            env=clean_env(env),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        assert wait_for(lambda: any(" takes runs of " in line for line in self.lines) or self.proc.poll()), (
            self.lines
        )
        assert self.proc.poll() is None, "".join(self.lines)
        self.id = re.search(r"worker (\S+) takes runs", "".join(self.lines)).group(1)  # type: ignore[union-attr]

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def took(self, run_id: str) -> bool:
        return any(f" took {run_id} " in line for line in self.lines)

    def kill(self) -> None:
        """SIGKILL the worker and every process it started (a tool's shell too)."""
        kill_tree(self.proc.pid)
        self.proc.wait(timeout=60)  # reaped: its pid no longer looks alive
        self._close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=120)
        self._close()

    def _close(self) -> None:
        self._reader.join(timeout=10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


def serve_queued(root: Path, files: list[Path], env: dict[str, str], *args: str) -> Served:
    """`flowrun serve http FILES --port 0 --runs-dir ROOT/runs ARGS`, back once the workers that
    `--workers N` starts take runs (no ARGS: the embedded queue, no workers of its own)."""
    extra = list(args) or ["--queue", "embedded"]
    served = Served(root, [*map(str, files), "--port", "0", "--runs-dir", str(root / "runs"), *extra], env)
    workers = int(extra[extra.index("--workers") + 1]) if "--workers" in extra else 0
    if not wait_for(lambda: sum(" takes runs of " in line for line in served.lines) >= workers):
        served.stop()
        raise AssertionError(f"the workers did not start: {served.lines}")
    return served


def start_run(http: httpx.Client, workflow_name: str, **inputs: str) -> str:
    answer = http.post("/v1/runs", json={"workflow": workflow_name, "inputs": inputs})
    assert answer.status_code == 201, answer.text
    assert answer.json()["status"] == "queued"
    return str(answer.json()["id"])


def follow(
    http: httpx.Client, run_id: str, after: int = 0, stop_after: int | None = None
) -> tuple[list[int], str]:
    """The seqs of a run's event stream after `after` (Last-Event-ID), until its end (or
    `stop_after` events); the status its end event gives ("" when stopped early)."""
    seqs: list[int] = []
    headers = {"last-event-id": str(after)} if after else {}
    with http.stream("GET", f"/v1/runs/{run_id}/events", headers=headers, timeout=120) as response:
        assert response.status_code == 200
        kind = ""
        for line in response.iter_lines():
            if line.startswith("id: "):
                seqs.append(int(line[4:]))
                if stop_after is not None and len(seqs) >= stop_after:
                    return seqs, ""
            elif line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: ") and kind == "end":
                return seqs, str(json.loads(line[6:])["status"])
    return seqs, ""


def log_of(run_dir: Path) -> list[dict[str, Any]]:
    """The run's events.jsonl, every line a whole JSON object (an assertion fails otherwise)."""
    text = (run_dir / "events.jsonl").read_text(encoding="utf-8")
    assert text.endswith("\n"), f"{run_dir.name}: the log ends in a torn line"
    return [json.loads(line) for line in text.splitlines()]


def check_completed_once(run_dir: Path) -> list[dict[str, Any]]:
    """The run's log is whole (seqs 1..n), it began once and ended once, completed."""
    events = log_of(run_dir)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), run_dir.name
    types = Counter(e["type"] for e in events)
    assert types["run_start"] == 1 and types["run_end"] == 1, (run_dir.name, types)
    assert events[-1]["type"] == "run_end" and events[-1]["status"] == "completed", events[-1]
    return events


def answered(run_dir: Path) -> int:
    """How many model answers the run's log records (its agent's turns answered); read as a
    killed writer left it, so a torn last line is not counted."""
    whole_lines = (run_dir / "events.jsonl").read_text(encoding="utf-8").split("\n")[:-1]
    return sum(json.loads(line)["type"] == "model_response" for line in whole_lines)


def steps_asked(requests: Iterable[WireRequest]) -> Counter[tuple[str, int]]:
    """How often each model step was asked: (its task, its turn)."""
    return Counter((task_of(r), r.assistant_turns) for r in requests)
