"""`flowrun chat` (a real interactive loop: over stdin and on a pseudo-terminal) saved as a run
folder that `flowrun resume` continues, and `flowrun resume RUN_DIR --message`: through the CLI
with the real SDKs against the scripted wire server."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
from support.cli import flowrun_cmd, run_cli
from support.env import WIRES, clean_env
from support.project import write_files
from support.runs import events, folders
from support.wire_server import Reply, WireRequest, WireServer

AGENT = "version: 1\nname: helper\nprompt: You are the helper.\ntools: [read_file, write_file]\n"


def echo(request: WireRequest) -> Reply:
    """Answers with the last user message in capitals: a pure function of the request."""
    return Reply(text=f"ECHO {request.last_user_text.upper()}")


def project(tmp: Path, base_url: str, api: str, entry: str = "entry: helper") -> Path:
    provider = "openai-compatible" if api == "openai" else "anthropic"
    workflow = f"""\
        version: 1
        kind: workflow
        name: talk
        models:
          m: {{provider: {provider}, base_url: "{base_url}", model: m, api_key_env: K}}
        default_model: m
        {entry}
        """
    return write_files(tmp, {"wf.yaml": textwrap.dedent(workflow), "agents.d/helper.yaml": AGENT})


def chat_cli(tmp: Path, args: list[str], stdin: str) -> subprocess.CompletedProcess[str]:
    env = clean_env({"K": "test-key-778899"})
    return subprocess.run(
        [*flowrun_cmd(), *args], cwd=tmp, env=env, input=stdin, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("api", WIRES)
def test_chat_over_stdin_then_resume(tmp_path: Path, api: str) -> None:
    with WireServer(echo) as server:
        project(tmp_path, server.base_url(api), api)
        proc = chat_cli(tmp_path, ["chat", "wf.yaml", "--run-id", "c", "-q"], "hello\nhow are you\n")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines()[:2] == ["ECHO HELLO", "ECHO HOW ARE YOU"]
        assert "you> " in proc.stderr and "flowrun resume" in proc.stderr
        first = len(server.requests)
        # resume: the recorded turns are not asked again; the conversation goes on
        proc = chat_cli(tmp_path, ["resume", "runs/c", "-q"], "one more\n")
        assert proc.returncode == 0, proc.stderr
        later = server.requests[first:]
    assert first == 2 and len(later) == 1
    assert proc.stdout.splitlines()[:2] == ["ECHO HOW ARE YOU", "ECHO ONE MORE"]
    texts = json.dumps(later[0].messages)
    assert "hello" in texts and "how are you" in texts and "one more" in texts
    run_dir = tmp_path / "runs" / "c"
    said = [(e["step"], e["text"]) for e in events(run_dir) if e["type"] == "user_message"]
    assert said == [(1, "how are you"), (2, "one more")]
    start = next(e for e in events(run_dir) if e["type"] == "agent_start")
    assert start["task"] == "hello"
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["chat"] == "helper" and meta["status"] == "completed"


def test_chat_on_a_pseudo_terminal(tmp_path: Path) -> None:
    with WireServer(echo) as server:
        project(tmp_path, server.openai_base_url, "openai")
        controller, terminal = pty.openpty()
        env = clean_env()
        proc = subprocess.Popen(
            [*flowrun_cmd(), "chat", "wf.yaml", "--run-id", "p"],
            cwd=tmp_path,
            env={**env, "K": "test-key-778899", "COLUMNS": "100", "TERM": "xterm"},
            stdin=terminal,
            stdout=terminal,
            stderr=terminal,
        )
        os.close(terminal)
        seen = b""

        def until(needle: bytes) -> None:
            nonlocal seen
            deadline = time.monotonic() + 60
            while needle not in seen and time.monotonic() < deadline:
                ready, _, _ = select.select([controller], [], [], 0.5)
                if ready:
                    seen += os.read(controller, 4096)
            assert needle in seen, seen

        try:
            until(b"you> ")
            os.write(controller, b"first line \\\n")
            until(b"...> ")
            os.write(controller, b"second line\n")
            until(b"ECHO FIRST LINE")  # the terminal shows the answer's line break as \r\n
            until(b"SECOND LINE\r\nyou> ")
            os.write(controller, b"/exit\n")
            deadline = time.monotonic() + 60
            while proc.poll() is None and time.monotonic() < deadline:
                try:
                    seen += os.read(controller, 4096)
                except OSError:
                    break
            assert proc.wait(30) == 0, seen
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            os.close(controller)
    run_dir = tmp_path / "runs" / "p"
    assert (
        next(e for e in events(run_dir) if e["type"] == "agent_start")["task"] == "first line \nsecond line"
    )


def test_resume_message_continues_a_finished_run(tmp_path: Path) -> None:
    with WireServer(echo) as server:
        project(tmp_path, server.anthropic_base_url, "anthropic")
        env = {"K": "test-key-778899"}
        proc = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        before = len(server.requests)
        proc = run_cli(["resume", "runs/r", "-q", "--message", "Now add a summary."], cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        later = server.requests[before:]
    assert before == 1 and len(later) == 1
    assert later[0].last_user_text == "Now add a summary."
    run_dir = tmp_path / "runs" / "r"
    said = [e for e in events(run_dir) if e["type"] == "user_message"]
    assert [(e["agent"], e["step"], e["text"]) for e in said] == [("helper", 1, "Now add a summary.")]
    ends = [e for e in events(run_dir) if e["type"] == "run_end"]
    assert len(ends) == 2 and ends[-1]["message"] == "ECHO NOW ADD A SUMMARY."
    # a run resumed without a message again: completed, nothing new
    proc = run_cli(["resume", "runs/r", "-q"], cwd=tmp_path, env=env)
    assert proc.returncode == 0 and "already completed" in proc.stdout


def test_resume_message_mistakes(tmp_path: Path) -> None:
    project(tmp_path, "http://127.0.0.1:9/v1", "openai", "steps: [{agent: helper}]")
    (tmp_path / "runs" / "s").mkdir(parents=True)
    meta = {"workflow_file": str(tmp_path / "wf.yaml"), "status": "failed", "inputs": {}}
    (tmp_path / "runs" / "s" / "run.json").write_text(json.dumps(meta))
    (tmp_path / "runs" / "s" / "events.jsonl").write_text("")
    proc = run_cli(["resume", "runs/s", "--message", "more"], cwd=tmp_path)
    assert proc.returncode == 2 and "has `steps:`" in proc.stderr
    proc = run_cli(["resume", "runs/s", "--message", "  "], cwd=tmp_path)
    assert proc.returncode == 2 and "--message is empty" in proc.stderr


def test_chat_with_another_agent_and_its_tools(tmp_path: Path) -> None:
    """`--agent NAME` talks to any agent of the project (here the research searcher, dry run):
    its tools run, each message after the first is a user_message; through the CLI and the API."""
    import asyncio

    from support.paths import REPO

    import flowrun

    research = str(REPO / "examples" / "research.yaml")
    args = ["chat", research, "--agent", "searcher", "--question", "q", "--dry-run", "--run-id", "c", "-q"]
    proc = chat_cli(tmp_path, args, "find the sorting docs\nand the HOWTO\n")
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp_path / "runs" / "c"
    found = events(run_dir)
    assert {e["agent"] for e in found if e["type"] == "agent_start"} == {"searcher"}
    assert next(e for e in found if e["type"] == "agent_start")["task"] == "find the sorting docs"
    tools = {e["tool"] for e in found if e["type"] == "tool_result" and e["result"]["status"] == "success"}
    assert {"web_search", "write_file"} <= tools
    assert [e["text"] for e in found if e["type"] == "user_message"] == ["and the HOWTO"]
    assert json.loads((run_dir / "run.json").read_text())["chat"] == "searcher"
    assert (run_dir / "prompts" / "searcher.md").read_text().count("You are a search specialist") == 1

    wf = flowrun.load(research)
    said: list[str | None] = []

    async def read(answer: str | None) -> str | None:
        said.append(answer)
        return "draft the report" if answer is None else None

    result = asyncio.run(
        wf.chat(read, {"question": "q"}, agent="writer", runs_dir=tmp_path / "api", dry_run=True)
    )
    assert result.ok and said[0] is None and "Dry run of writer" in str(said[1])
    with pytest.raises(flowrun.UsageError, match="no agent 'writr' to chat with") as caught:
        asyncio.run(wf.chat(read, {"question": "q"}, agent="writr", runs_dir=tmp_path / "api", dry_run=True))
    assert caught.value.hint == "did you mean 'writer'?"
    proc = chat_cli(tmp_path, [*args[:3], "serchr", *args[4:7]], "x\n")
    assert proc.returncode == 2 and "did you mean 'searcher'?" in proc.stderr
    assert [p.name for p in folders(tmp_path / "runs")] == ["c"]  # no run folder for a mistake
