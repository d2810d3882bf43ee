"""MCP elicitation: a server's question during a tool call is the calling agent's question;
without a terminal the run waits for it, and `flowrun answer` / `flowrun.respond` answer it;
the server gets the answer (accepted content, or a refusal) and the call finishes. Through both
wire formats of the scripted model server, with the real test server (tests/mcp_test_server.py)."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import select
import subprocess
import time
from pathlib import Path

import pytest
from support.cli import flowrun_cmd, run_cli
from support.env import WIRES, clean_env, model_env
from support.runs import events as events_of
from support.wire_server import Reply, Script, WireServer, call
from test_mcp_client import WORKER, mcp_project, stdio_server
from test_mcp_defer import run

import flowrun
from flowrun.foreign_text import frame
from flowrun.tools.remote.mcp_elicit import parse_answer, question

WAITING = 75  # EX_TEMPFAIL: the run waits for a decision
BOOK = "MCP server 'calc', tool 'book'"  # the source its results are framed as (flowrun/foreign_text.py)


def booking_script() -> Script:
    return Script({WORKER: [Reply(tool_calls=[call("calc__book", show="Hamlet")]), Reply(text="All done.")]})


@pytest.mark.parametrize("provider", WIRES)
def test_a_server_question_waits_and_flowrun_answer_gives_the_server_its_content(
    tmp_path: Path, provider: str
) -> None:
    workflow = mcp_project(tmp_path, {"calc": stdio_server("elicit")}, ["calc.book"])
    with WireServer(booking_script()) as server:
        code, out, run_dir = run(tmp_path, workflow, server, provider)
        assert code == WAITING, out
        pending = json.loads((run_dir / "run.json").read_text())["pending"]
        assert len(pending) == 1 and pending[0]["kind"] == "question"
        assert (
            "The MCP server 'calc' asks (during book): How many seats for Hamlet?" in pending[0]["question"]
        )
        assert "seats (integer)" in pending[0]["question"]
        asked = len(server.requests)
        answer = run_cli(
            ["answer", str(run_dir), "3"], cwd=tmp_path, env=model_env(server, provider), timeout=180
        )
        assert answer.returncode == 0, answer.stdout + answer.stderr
        after = server.requests[asked:]
    assert [text for _, text, _ in after[-1].tool_results] == [frame("booked 3 seats for Hamlet", BOOK)]
    events = events_of(run_dir)
    assert events[-1]["status"] == "completed"
    decisions = [e for e in events if e["type"] == "decision"]
    assert [d["answer"] for d in decisions] == ["3"]
    # a replay gives the server the recorded answer: nothing is asked, the output is the same
    replayed = run_cli(["replay", str(run_dir), "--into", str(tmp_path / "replayed")], cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    again = events_of(tmp_path / "replayed")
    assert not [e for e in again if e["type"] == "decision_pending"]
    assert again[-1]["status"] == "completed"


def test_a_live_answer_through_the_ask_user_callback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workflow = mcp_project(tmp_path, {"calc": stdio_server("elicit-live")}, ["calc.book"])
    monkeypatch.chdir(tmp_path)
    asked: list[str] = []

    def person(text: str) -> str:
        asked.append(text)
        return '{"seats": 4}'

    with WireServer(booking_script()) as server:
        for key, value in model_env(server, "openai").items():
            monkeypatch.setenv(key, value)
        wf = flowrun.load(workflow)
        options = flowrun.RunOptions(model="openai:gpt-test")
        result = wf.run_sync(
            {"question": "q"}, runs_dir=tmp_path / "runs", run_id="live", ask_user=person, options=options
        )
        last = server.requests[-1]
    assert result.status == "completed", result
    assert len(asked) == 1 and "How many seats for Hamlet?" in asked[0]
    assert [text for _, text, _ in last.tool_results] == [frame("booked 4 seats for Hamlet", BOOK)]


def test_flowrun_respond_declines_and_a_wrong_answer_is_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workflow = mcp_project(tmp_path, {"calc": stdio_server("elicit-py")}, ["calc.book"])
    monkeypatch.chdir(tmp_path)
    with WireServer(booking_script()) as server:
        for key, value in model_env(server, "anthropic").items():
            monkeypatch.setenv(key, value)
        wf = flowrun.load(workflow)
        result = wf.run_sync({"question": "q"}, runs_dir=tmp_path / "runs", run_id="p1")
        assert result.status == "waiting"
        (first,) = result.pending
        flowrun.respond(result.run_dir, first.ref, answer="three")  # not an integer: asked again
        result = asyncio.run(flowrun.resume(result.run_dir))
        assert result.status == "waiting"
        (second,) = result.pending
        assert "That answer did not fit" in second.describe()
        flowrun.respond(result.run_dir, second.ref, answer="decline")
        result = asyncio.run(flowrun.resume(result.run_dir))
        assert result.status == "completed", result
        last = server.requests[-1]
    assert [text for _, text, _ in last.tool_results] == [frame("booking decline", BOOK)]


def test_answers_are_read_as_the_requested_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"seats": {"type": "integer"}, "aisle": {"type": "boolean"}},
        "required": ["seats"],
    }
    assert parse_answer('{"seats": 2, "aisle": true}', schema) == ("accept", {"seats": 2, "aisle": True}, "")
    assert parse_answer("Decline", schema) == ("decline", None, "")
    assert parse_answer("cancel", schema) == ("cancel", None, "")
    _, content, problem = parse_answer('{"aisle": true}', schema)
    assert content is None and "'seats' is a required property" in problem
    one = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    assert parse_answer("yes", one) == ("accept", {"ok": True}, "")
    assert "ok (boolean)" in question("srv", "tool", "Sure?", one)


def typed_at_the_question(tmp_path: Path, server: WireServer, run_id: str, typed: bytes) -> tuple[int, bytes]:
    """Run the booking workflow on a pseudo-terminal; once the server's question shows, type
    `typed`; the command's exit code and all it printed."""
    workflow = mcp_project(tmp_path, {"calc": stdio_server(f"elicit-{run_id}")}, ["calc.book"])
    controller, terminal = pty.openpty()
    env = clean_env(model_env(server, "anthropic") | {"COLUMNS": "100", "TERM": "xterm"})
    args = [*flowrun_cmd(), str(workflow), "--question", "q", "--runs-dir", "runs", "--run-id", run_id]
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdin=terminal, stdout=terminal, stderr=terminal)
    os.close(terminal)
    seen = b""
    deadline = time.monotonic() + 120
    while b"or /later" not in seen and time.monotonic() < deadline:
        if select.select([controller], [], [], 1.0)[0]:  # a hang fails at the deadline, never blocks
            seen += os.read(controller, 4096)
    assert b"How many seats for Hamlet?" in seen, seen
    os.write(controller, typed)
    while proc.poll() is None and time.monotonic() < deadline:
        if select.select([controller], [], [], 1.0)[0]:
            try:
                seen += os.read(controller, 4096)
            except OSError:  # the other side closed
                break
    code = proc.wait(30)
    os.close(controller)
    return code, seen


def test_a_terminal_answers_the_servers_question(tmp_path: Path) -> None:
    """A pseudo-terminal: the server's question appears, the typed answer goes to the server."""
    with WireServer(booking_script()) as server:
        code, seen = typed_at_the_question(tmp_path, server, "t", b"2\n")
        assert code == 0, seen
        last = server.requests[-1]
    assert [text for _, text, _ in last.tool_results] == [frame("booked 2 seats for Hamlet", BOOK)]


def test_a_question_after_the_terminals_input_ended_waits_for_flowrun_answer(tmp_path: Path) -> None:
    """The terminal's input has ended (Ctrl-D) when the server asks: nobody can answer now, so
    the run waits for the answer as an approval does (exit 75), and `flowrun answer` gives the
    server its content."""
    with WireServer(booking_script()) as server:
        code, seen = typed_at_the_question(tmp_path, server, "e", b"\x04")  # Ctrl-D: input ended
        assert code == WAITING, seen
        assert b"internal error" not in seen and b"Traceback" not in seen, seen
        run_dir = tmp_path / "runs" / "e"
        answered = run_cli(["answer", str(run_dir), "2"], cwd=tmp_path, env=model_env(server, "anthropic"))
        assert answered.returncode == 0, answered.stdout + answered.stderr
        last = server.requests[-1]
    assert [text for _, text, _ in last.tool_results] == [frame("booked 2 seats for Hamlet", BOOK)]
