"""A `flowrun serve http` subprocess for the tests, and the project it serves: `nested`
(orchestrator -> manager -> worker, whose write_file needs an approval), `talk` (one agent
making two tool calls, whose second model call a test can hold at the wire server) and
`branches` (two parallel steps, alpha and beta, each of whose write_file needs an approval), all
written by `served_project`."""

from __future__ import annotations

import re
import signal
import subprocess
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from support.cli import flowrun_cmd
from support.env import clean_env
from support.procs import wait_for
from support.project import agent, model, wire_script, workflow, write_files
from support.wire_server import Reply, Script, ToolCallSpec, WireRequest

AGENTS: dict[str, list[Any]] = {
    "orchestrator": ["manager"],
    "manager": ["worker"],
    "worker": [{"write_file": {"approve": "ask"}}],
    "talker": ["list_directory"],
    "alpha": [{"write_file": {"approve": "ask"}}],
    "beta": [{"write_file": {"approve": "ask"}}],
}
TOKEN = "a-token-long-enough-0123456789"
TALK_PRICE = {"input": 1.0, "output": 2.0}  # dollars per million tokens


def replies(**more: list[Reply]) -> Script:
    """The script of the project's agents (and of `more` agents a test serves beside them)."""
    agents = {
        "orchestrator": [
            Reply(tool_calls=[ToolCallSpec("manager", {"task": "Manage it."})]),
            Reply("All done."),
        ],
        "manager": [Reply(tool_calls=[ToolCallSpec("worker", {"task": "Write it."})]), Reply("Managed.")],
        "worker": [
            Reply(tool_calls=[ToolCallSpec("write_file", {"path": "out.txt", "content": "approved\n"})]),
            Reply("Wrote it."),
        ],
        "talker": [
            Reply("Looking at the folder.", tool_calls=[ToolCallSpec("list_directory", {"path": "."})]),
            Reply(tool_calls=[ToolCallSpec("list_directory", {"path": "."})]),
            Reply("Talked."),
        ],
        **{
            side: [
                Reply(tool_calls=[ToolCallSpec("write_file", {"path": f"{side}.txt", "content": side})]),
                Reply(f"{side} done."),
            ]
            for side in ("alpha", "beta")
        },
        **more,
    }
    return wire_script(agents)


class Held:
    """The script, but while `armed`, the talker's second model call waits for `release`
    (`holding` is set when it does): the run is going on, in flight, as long as a test needs."""

    def __init__(self, inner: Script) -> None:
        self.inner = inner
        self.armed = False
        self.holding = threading.Event()
        self.release = threading.Event()

    def arm(self) -> None:
        self.holding.clear()
        self.release.clear()
        self.armed = True

    def __call__(self, request: WireRequest) -> Reply:
        if self.armed and self.inner.agent_for(request) == "talker" and request.assistant_turns == 1:
            self.armed = False
            self.holding.set()
            self.release.wait(120)
        return self.inner(request)


def served_project(root: Path, provider: str) -> list[Path]:
    """The three workflows (and their agents) using `provider`'s model."""
    write_files(root, {f"agents.d/{name}.yaml": agent(name, tools=tools) for name, tools in AGENTS.items()})
    parallel = {"parallel": [{"agent": side, "task": f"Side {side}."} for side in ("alpha", "beta")]}
    specs = [
        workflow(model(provider), name="nested", entry="orchestrator", task="Do the job."),
        # priced: a cancel's partial result has a cost
        workflow(model(provider, price=TALK_PRICE), name="talk", entry="talker", task="Do the job."),
        workflow(model(provider), name="branches", steps=[parallel]),
    ]
    write_files(root, {f"{spec['name']}.yaml": spec for spec in specs})
    return [root / f"{spec['name']}.yaml" for spec in specs]


FIRST_LINE = {"http": "serving the runs API at http://", "a2a": "serving A2A at http://"}
FIRST_LINE["ui"] = FIRST_LINE["http"]  # `flowrun ui` is the runs API with the pages
COMMANDS = {"http": ["serve", "http"], "a2a": ["serve", "a2a"], "ui": ["ui"]}


class Served:
    """`flowrun serve COMMAND ARGS --port 0` in a subprocess (`serve http` by default, `serve
    a2a`, or `ui`); `base` is its address once it listens (the first line it writes)."""

    def __init__(
        self, cwd: Path, args: list[str], env: dict[str, str] | None = None, command: str = "http"
    ) -> None:
        self.proc = subprocess.Popen(
            [*flowrun_cmd(), *COMMANDS[command], *args],
            cwd=cwd,
            env=clean_env(env),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        first = self.proc.stderr.readline()
        self.lines = [first]
        assert first.startswith(FIRST_LINE[command]), first + self.proc.stderr.read()
        port = re.search(r"http://[^\s/]+:(\d+)", first)
        assert port is not None, first
        self.base = f"http://127.0.0.1:{port.group(1)}"
        self._drain = threading.Thread(target=self._read, daemon=True)
        self._drain.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def client(self, **headers: str) -> httpx.Client:
        return httpx.Client(base_url=self.base, timeout=60, headers=headers)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=60)
        self._close()

    def _close(self) -> None:
        self._drain.join(timeout=10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=60)  # reaped: its pid no longer looks alive
        self._close()


def status_of(http: httpx.Client, run_id: str) -> str:
    answer = http.get(f"/v1/runs/{run_id}")
    assert answer.status_code == 200, answer.text
    return str(answer.json()["status"])


def wait_status(http: httpx.Client, run_id: str, *wanted: str) -> dict[str, Any]:
    """Poll the run until its status is one of `wanted`; its details then."""
    seen: list[str] = []

    def reached() -> bool:
        seen.append(status_of(http, run_id))
        return seen[-1] in wanted

    assert wait_for(reached), f"{run_id} never reached {wanted}: {seen[-5:]}"
    details: dict[str, Any] = http.get(f"/v1/runs/{run_id}").json()
    return details


def step_of(request: WireRequest, script: Script) -> tuple[str, str, int]:
    """The model step a request asks for: (agent, its task, its turn)."""
    first = next((m for m in request.messages if m.get("role") == "user"), {})
    return str(script.agent_for(request)), str(first.get("content"))[:80], request.assistant_turns


def asked_twice(requests: list[WireRequest], script: Script) -> Counter[tuple[str, str, int]]:
    """The model steps requested more than once: (agent, its task, its turn)."""
    counts = Counter(step_of(request, script) for request in requests)
    return Counter({key: n for key, n in counts.items() if n > 1})
