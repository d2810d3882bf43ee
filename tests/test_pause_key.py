"""The pause key of an interactive run, through a pseudo-terminal: Esc pauses at the next step
boundary, the message typed there goes to the agent that is running (recorded as a
`user_message` event, so replay and resume give it again), and the run goes on; Ctrl-C keeps
its meaning and the terminal is given back. The model is the wire server (both wire formats),
held at a gate so the key is pressed while a model call is pending: the test waits for what the
terminal shows and what the server received, never for a time."""

from __future__ import annotations

import fcntl
import json
import os
import select
import struct
import subprocess
import termios
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.cli import flowrun_cmd, run_cli
from support.env import WIRES
from support.procs import wait_for
from support.project import write_files
from support.runs import events
from support.wire_server import Reply, ToolCallSpec, WireRequest, WireServer

DEADLINE_S = 60.0
MESSAGE = "use tabs, not spaces"


class Gate:
    """The agent's first model call waits until `go` is set; then it reads NOTE.md and ends."""

    def __init__(self) -> None:
        self.go = threading.Event()

    def __call__(self, request: WireRequest) -> Reply:
        if request.assistant_turns == 0:
            self.go.wait(DEADLINE_S)
            return Reply(tool_calls=[ToolCallSpec("read_file", {"path": "NOTE.md"})])
        return Reply(text=f"done; last I heard: {request.last_user_text}")


def project(root: Path, provider: str) -> None:
    files = {
        "wf.yaml": f"""\
            version: 1
            kind: workflow
            name: paused
            inputs: {{q: {{default: tidy the note}}}}
            models: {{m: {{provider: {provider}, model: m-1, base_url: "${{URL}}", max_retries: 0}}}}
            default_model: m
            entry: solo
            workspace: {{files: {{NOTE.md: "a note\\n"}}}}
            """,
        "agents.d/solo.yaml": "version: 1\nname: solo\nprompt: You are solo.\ntools: [read_file]\n",
    }
    write_files(root, files)


class Terminal:
    """A command on a pseudo-terminal (its controlling terminal, so Ctrl-C is a SIGINT)."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.master, self.slave = os.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.output = b""
        self.proc = subprocess.Popen(
            [*flowrun_cmd(), *args],
            cwd=cwd,
            env=env,
            stdin=self.slave,
            stdout=self.slave,
            stderr=self.slave,
            preexec_fn=_take_terminal,
        )

    def read_until(self, text: str) -> None:
        """Read what the terminal shows until `text` appears (or the command ends)."""
        wanted = text.encode()
        while wanted not in self.output:
            ready, _, _ = select.select([self.master], [], [], DEADLINE_S)
            assert ready, f"{text!r} never appeared:\n{self.shown()}"
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # the command ended and closed the terminal
                chunk = b""
            assert chunk, f"{text!r} never appeared:\n{self.shown()}"
            self.output += chunk

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def finish(self) -> int:
        """The exit code, after reading everything the command printed."""
        code = self.proc.wait(DEADLINE_S)
        while select.select([self.master], [], [], 0)[0]:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.output += chunk
        return code

    def shown(self) -> str:
        return self.output.decode("utf-8", "replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)
        os.close(self.slave)


def _take_terminal() -> None:
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@contextmanager
def running(tmp_path: Path, provider: str, args: list[str]) -> Iterator[tuple[Terminal, WireServer, Gate]]:
    project(tmp_path, provider)
    gate = Gate()
    with WireServer(gate) as server:
        url = server.base_url(provider)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
        env |= {"URL": url, "ANTHROPIC_API_KEY": "k-anthropic", "OPENAI_API_KEY": "k-openai", "TERM": "xterm"}
        terminal = Terminal(["wf.yaml", "--run-id", "r", *args], tmp_path, env)
        try:
            yield terminal, server, gate
        finally:
            gate.go.set()
            terminal.close()


@pytest.mark.parametrize("provider", WIRES)
def test_esc_pauses_and_the_message_goes_to_the_running_agent(tmp_path: Path, provider: str) -> None:
    with running(tmp_path, provider, []) as (terminal, server, gate):
        terminal.read_until("Esc pauses the run")
        assert wait_for(lambda: len(server.requests) == 1, DEADLINE_S)  # the model call is pending
        terminal.type(b"\x1b")
        terminal.read_until("pausing at the next step boundary")
        gate.go.set()  # the answer comes: the run reaches the next step boundary and asks
        terminal.read_until("Your message to solo")
        terminal.type(MESSAGE.encode() + b"\n")
        code = terminal.finish()
        requests = server.requests
    assert code == 0, terminal.shown()
    assert "solo goes on with your message" in terminal.shown()
    # the message reached the agent that was running, before its next model call
    assert len(requests) == 2 and requests[1].last_user_text == MESSAGE
    run_dir = tmp_path / "runs" / "r"
    logged = events(run_dir)
    (said,) = [e for e in logged if e["type"] == "user_message"]
    assert (said["agent"], said["agent_id"], said["step"], said["text"]) == ("solo", "solo", 1, MESSAGE)
    shown = run_cli(["show", str(run_dir), "--messages"], cwd=tmp_path).stdout.splitlines()
    assert shown[shown.index("user") + 1] == f"    {MESSAGE}"

    # a replay gives the recorded message at the same step: nothing diverges
    proc = run_cli(["replay", str(run_dir), "--diff"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no step diverges" in proc.stdout

    # a resume from just after the message gives it again, then asks the model live
    cut = next(i for i, e in enumerate(logged) if e["type"] == "user_message")
    lines = (run_dir / "events.jsonl").read_text().splitlines()[: cut + 1]
    (run_dir / "events.jsonl").write_text("\n".join(lines) + "\n")
    meta = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**meta, "status": "running"}))
    with WireServer(Gate()) as server:
        gate_open = server.base_url(provider)
        keys = {"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k", "URL": gate_open}
        proc = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path, env=keys)
        resumed = server.requests
    assert proc.returncode == 0, proc.stderr
    assert [r.last_user_text for r in resumed] == [MESSAGE]
    assert sum(e["type"] == "user_message" for e in events(run_dir)) == 1


def test_an_empty_line_goes_on_without_a_message(tmp_path: Path) -> None:
    with running(tmp_path, "openai", ["-q"]) as (terminal, server, gate):
        assert wait_for(lambda: len(server.requests) == 1, DEADLINE_S)
        terminal.type(b"\x1b")
        terminal.read_until("pausing at the next step boundary")
        gate.go.set()
        terminal.read_until("Your message to solo")
        terminal.type(b"\n")
        code = terminal.finish()
        requests = server.requests
    assert code == 0, terminal.shown()
    assert len(requests) == 2 and requests[1].last_user_text != ""
    assert not any(e["type"] == "user_message" for e in events(tmp_path / "runs" / "r"))


def test_ctrl_c_still_stops_the_run_and_the_terminal_is_given_back(tmp_path: Path) -> None:
    with running(tmp_path, "anthropic", []) as (terminal, server, _):
        terminal.read_until("Esc pauses the run")
        assert wait_for(lambda: len(server.requests) == 1, DEADLINE_S)
        mode = termios.tcgetattr(terminal.slave)
        assert not mode[3] & termios.ECHO  # keys are not echoed over the panel meanwhile
        terminal.type(b"\x03")
        code = terminal.finish()
        restored = termios.tcgetattr(terminal.slave)
    assert code == 130, terminal.shown()
    assert "continue with `flowrun resume" in terminal.shown()
    assert restored[3] & termios.ECHO and restored[3] & termios.ICANON
    assert json.loads((tmp_path / "runs" / "r" / "run.json").read_text())["status"] == "cancelled"


def test_no_pause_key_without_a_terminal(tmp_path: Path) -> None:
    project(tmp_path, "openai")
    proc = run_cli(["wf.yaml", "--dry-run"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Esc pauses" not in proc.stderr
