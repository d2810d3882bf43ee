"""`flowrun serve mcp`: a workflow served as an MCP tool and called with the `mcp` client over
stdio and streamable HTTP: its inputs are the parameters, progress arrives while it runs, the
output and the run folder come back, and the run folder is a normal, complete run."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from support.cli import flowrun_cmd
from support.env import clean_env, model_env
from support.paths import REPO
from support.project import write_files

WORKFLOW = """version: 1
kind: workflow
name: summarize
description: Summarize a topic into a short report.
inputs:
  topic: {description: What to summarize.}
  depth: {type: integer, default: 2, description: How deep to go.}
  style: {choices: [brief, full], default: brief}
models: {m: {provider: test, model: t}}
default_model: m
entry: writer
output: report.md
"""
WRITER = """version: 1
kind: agent
name: writer
prompt: Write the report.
tools: [write_file, read_file]
"""


def project(tmp_path: Path) -> Path:
    return (
        write_files(tmp_path, {"agents.d/writer.yaml": WRITER, "summarize.yaml": WORKFLOW}) / "summarize.yaml"
    )


async def exercise(client: Client) -> dict[str, Any]:
    listed = await client.list_tools()
    (tool,) = listed.tools
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    result = await client.call_tool(
        "summarize", {"topic": "sorting", "depth": 3}, progress_callback=on_progress
    )
    bad = await client.call_tool("summarize", {"depth": 1})
    return {"tool": tool, "result": result, "progress": progress, "bad": bad}


def check(found: dict[str, Any], runs: Path) -> None:
    tool = found["tool"]
    assert tool.name == "summarize"
    assert "Summarize a topic" in (tool.description or "")
    schema = tool.input_schema
    assert schema["required"] == ["topic"]
    assert schema["properties"]["depth"] == {
        "type": "integer",
        "default": 2,
        "description": "How deep to go.",
    }
    assert schema["properties"]["style"]["enum"] == ["brief", "full"]
    result = found["result"]
    assert not result.is_error
    text = result.content[0].text
    structured = result.structured_content
    run_dir = Path(structured["run_dir"])
    assert structured["status"] == "completed" and structured["exit_code"] == 0
    assert run_dir.parent == runs.resolve()
    assert f"run folder: {run_dir}" in text
    report = (run_dir / "report.md").read_text()
    assert report and report.strip() in text  # the declared output's content is the result
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "completed" and meta["inputs"] == {
        "topic": "sorting",
        "depth": 3,
        "style": "brief",
    }
    assert any("writer started" in p for p in found["progress"])
    assert any("writer → write_file" in p for p in found["progress"])
    bad = found["bad"]
    assert bad.is_error and "topic" in bad.content[0].text


def test_serve_over_stdio(tmp_path: Path) -> None:
    workflow = project(tmp_path)
    runs = tmp_path / "runs"
    command, *args = flowrun_cmd()
    params = StdioServerParameters(
        command=command,
        args=[*args, "serve", "mcp", str(workflow), "--dry-run", "--runs-dir", str(runs)],
        env=clean_env(),
        cwd=tmp_path,
    )

    async def main() -> dict[str, Any]:
        async with Client(params) as client:
            return await exercise(client)

    check(asyncio.run(asyncio.wait_for(main(), 120)), runs)


def test_serve_over_http(tmp_path: Path) -> None:
    workflow = project(tmp_path)
    runs = tmp_path / "runs"
    with subprocess.Popen(
        [*flowrun_cmd(), "serve", "mcp", str(workflow), "--http", "0", "--dry-run", "--runs-dir", str(runs)],
        cwd=tmp_path,
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        serve_and_call(proc, runs)
    assert [p for p in runs.iterdir() if (p / "run.json").is_file()], "the call ran no workflow"


def serve_and_call(proc: subprocess.Popen[str], runs: Path) -> None:
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("serving MCP at http://127.0.0.1:"), line
        url = line.split()[-1]

        async def main() -> dict[str, Any]:
            async with Client(url) as client:
                return await exercise(client)

        check(asyncio.run(asyncio.wait_for(main(), 120)), runs)
    finally:
        proc.terminate()
        proc.wait(timeout=120)


def test_serve_reports_a_broken_workflow_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(WORKFLOW.replace("entry: writer", "entry: nobody"))
    proc = subprocess.run(
        [*flowrun_cmd(), "serve", "mcp", str(tmp_path / "bad.yaml")],
        capture_output=True,
        text=True,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "unknown agent 'nobody'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


# ---------------------------------------------------------------- list inputs, tokens, Host checks

TOKEN = "t0ken-for-the-serve-tests-0123456789"


def test_serve_lists_a_workflow_with_a_list_input(tmp_path: Path) -> None:
    """A `type: list` input is an array parameter, and one such workflow does not break the
    listing of the others (examples/research_foreach.yaml, served as shipped)."""
    workflow = project(tmp_path)
    runs = tmp_path / "runs"
    command, *args = flowrun_cmd()
    foreach = REPO / "examples" / "research_foreach.yaml"
    params = StdioServerParameters(
        command=command,
        args=[*args, "serve", "mcp", str(workflow), str(foreach), "--dry-run", "--runs-dir", str(runs)],
        env=clean_env(),
        cwd=tmp_path,
    )

    async def main() -> tuple[Any, Any]:
        async with Client(params) as client:
            listed = await client.list_tools()
            result = await client.call_tool(
                "research_foreach", {"questions": ["What is a key?", "Why sort?"]}
            )
            return listed, result

    listed, result = asyncio.run(asyncio.wait_for(main(), 180))
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == {"summarize", "research_foreach"}
    questions = tools["research_foreach"].input_schema["properties"]["questions"]
    assert questions["type"] == "array" and "JSON array" in questions["description"]
    assert not result.is_error, result.content[0].text
    meta = json.loads((Path(result.structured_content["run_dir"]) / "run.json").read_text())
    assert meta["inputs"]["questions"] == ["What is a key?", "Why sort?"]


def serve(tmp_path: Path, *options: str, extra_env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    workflow = project(tmp_path)
    command = [*flowrun_cmd(), "serve", "mcp", str(workflow), "--http", "0", "--dry-run", *options]
    return subprocess.Popen(
        [*command, "--runs-dir", str(tmp_path / "runs")],
        cwd=tmp_path,
        env={**clean_env(), **(extra_env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_serve_elsewhere_than_loopback_needs_a_token(tmp_path: Path) -> None:
    with serve(tmp_path, "--host", "0.0.0.0") as proc:
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert err.startswith("error: --host 0.0.0.0 would serve these workflows, and the tools of their agents")
    assert "FLOWRUN_MCP_TOKEN" in err and "--token-file" in err and "Traceback" not in err
    (tmp_path / "short").write_text("abc\n")
    with serve(tmp_path, "--host", "0.0.0.0", "--token-file", str(tmp_path / "short")) as proc:
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "shorter than 16 characters" in err, err


def test_serve_with_a_token_checks_it_and_the_host_on_every_request(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    with serve(tmp_path, "--host", "0.0.0.0", extra_env={"FLOWRUN_MCP_TOKEN": TOKEN}) as proc:
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            assert line.startswith("serving MCP at http://0.0.0.0:"), line
            port = int(line.rsplit(":", 1)[1].split("/")[0])
            url = f"http://127.0.0.1:{port}/mcp"

            async def main() -> dict[str, Any]:
                import httpx2
                from mcp.client.streamable_http import streamable_http_client

                headers = {"Authorization": f"Bearer {TOKEN}"}
                async with (
                    httpx2.AsyncClient(headers=headers, timeout=60) as http,
                    Client(streamable_http_client(url, http_client=http)) as client,
                ):
                    return await exercise(client)

            check(asyncio.run(asyncio.wait_for(main(), 120)), runs)
            statuses = raw_statuses(url, port)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    assert statuses == {"no token": 401, "wrong token": 401, "evil host": 421, "evil origin": 403, "ok": 200}


def raw_statuses(url: str, port: int) -> dict[str, int]:
    """The status of an `initialize` POST without the token, with a wrong one, from a page of
    another site (its Host, its Origin), and as a client should send it."""
    import httpx

    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    good = {**base, "Authorization": f"Bearer {TOKEN}"}
    cases = {
        "no token": base,
        "wrong token": {**base, "Authorization": "Bearer not-the-token-at-all-000000"},
        "evil host": {**good, "Host": "evil.example"},
        "evil origin": {**good, "Origin": "http://evil.example"},
        "ok": good,
    }
    with httpx.Client(timeout=30) as http:
        return {
            name: http.post(url, json=body, headers=headers).status_code for name, headers in cases.items()
        }


def test_loopback_server_refuses_another_host(tmp_path: Path) -> None:
    with serve(tmp_path) as proc:
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            url = line.split()[-1]
            import httpx

            headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
            with httpx.Client(timeout=30) as http:
                evil = http.post(url, json={}, headers={**headers, "Host": "evil.example"})
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    assert evil.status_code == 421


# ---------------------------------------------------------------- long runs: logging, cancel, reconnect


class HeldServer:
    """`flowrun serve mcp --http 0` serving the `talk` workflow (support/served.py) over the
    wire server, whose talker's second model call waits while `held` is armed: a long run."""

    def __init__(self, root: Path) -> None:
        from support.served import Held, replies, served_project
        from support.wire_server import WireServer

        self.held = Held(replies())
        self.wire = WireServer(self.held)
        files = served_project(root, "openai")
        self.runs = root / "runs"
        self.env = clean_env(model_env(self.wire, "openai"))
        self.proc = subprocess.Popen(
            [*flowrun_cmd(), "serve", "mcp", *map(str, files), "--http", "0", "--runs-dir", str(self.runs)],
            cwd=root,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        assert line.startswith("serving MCP at http://127.0.0.1:"), line
        self.url = line.split()[-1]

    def run_json(self) -> dict[str, Any]:
        (folder,) = [p for p in self.runs.iterdir() if (p / "run.json").is_file()]
        return dict(json.loads((folder / "run.json").read_text()), folder=str(folder))

    def close(self) -> None:
        self.held.release.set()
        self.proc.terminate()
        self.proc.wait(timeout=60)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        self.wire.stop()


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # logging: a 2025 feature
def test_serve_names_its_version_and_logs_each_step(tmp_path: Path) -> None:
    import flowrun

    served = HeldServer(tmp_path)
    try:

        async def main() -> tuple[Any, list[Any]]:
            logs: list[Any] = []

            async def on_log(params: Any) -> None:
                logs.append(params)

            async with Client(served.url, logging_callback=on_log, mode="legacy") as client:
                info = client.server_info
                await client.set_logging_level("info")
                await client.call_tool("talk", {})
                return info, logs

        info, logs = asyncio.run(asyncio.wait_for(main(), 120))
    finally:
        served.close()
    assert info.name == "flowrun" and info.version == flowrun.__version__
    lines = [entry.data for entry in logs]
    assert "talker started" in lines and "talker → list_directory" in lines, lines
    assert {entry.level for entry in logs} == {"info"} and {entry.logger for entry in logs} == {"flowrun"}


def test_cancelling_a_call_stops_its_run_resumably(tmp_path: Path) -> None:
    from support.procs import wait_for

    served = HeldServer(tmp_path)
    try:
        served.held.arm()

        async def main() -> None:
            import anyio

            async with Client(served.url) as client, anyio.create_task_group() as group:
                group.start_soon(client.call_tool, "talk", {})
                await anyio.to_thread.run_sync(served.held.holding.wait, 60)
                group.cancel_scope.cancel()  # the client sends notifications/cancelled

        asyncio.run(asyncio.wait_for(main(), 120))
        assert served.held.holding.is_set()
        assert wait_for(lambda: served.run_json()["status"] == "cancelled"), served.run_json()
        served.held.release.set()
        folder = served.run_json()["folder"]
        resumed = subprocess.run(
            [*flowrun_cmd(), "resume", folder], cwd=tmp_path, env=served.env, capture_output=True, text=True
        )
    finally:
        served.close()
    assert resumed.returncode == 0, resumed.stderr
    assert served.run_json()["status"] == "completed"


def test_a_client_that_lost_its_connection_gets_the_result_on_reconnecting(tmp_path: Path) -> None:
    from support.procs import DEADLINE_S

    served = HeldServer(tmp_path)
    answers: list[dict[str, Any]] = []  # what the resumed stream delivered, kept if it stalls
    try:
        asyncio.run(asyncio.wait_for(lose_and_resume(served, answers), DEADLINE_S))
    except TimeoutError:
        pytest.fail(f"no result for the call within {DEADLINE_S:.0f} s; the resumed stream sent {answers}")
    finally:
        served.close()
    (result,) = [a for a in answers if a.get("id") == 7]
    text = result["result"]["content"][0]["text"]
    assert "status: completed" in text and f"run folder: {served.run_json()['folder']}" in text


async def lose_and_resume(served: HeldServer, answers: list[dict[str, Any]]) -> None:
    """Call `talk`, drop the connection after the stream's first event (the priming one), let
    the run end, then resume the stream with `Last-Event-ID`: what it replays, up to the call's
    result, goes to `answers`."""
    import httpx
    from support.procs import DEADLINE_S, wait_for

    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=60) as http:
        hello = await http.post(served.url, headers=headers, json=INITIALIZE)
        headers |= {"mcp-session-id": hello.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        await http.post(
            served.url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
        )
        served.held.arm()
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "talk", "arguments": {}},
        }
        last_id = None
        async with http.stream("POST", served.url, headers=headers, json=call) as stream:
            async for line in stream.aiter_lines():
                if line.startswith("id:"):
                    last_id = line[3:].strip()
                    break  # then the connection is lost
        assert last_id is not None
        assert await asyncio.to_thread(served.held.holding.wait, DEADLINE_S)
        served.held.release.set()
        completed = await asyncio.to_thread(wait_for, lambda: served.run_json()["status"] == "completed")
        assert completed, served.run_json()
        async with http.stream("GET", served.url, headers=headers | {"Last-Event-ID": last_id}) as resumed:
            async for line in resumed.aiter_lines():
                if line.startswith("data:") and line[5:].strip():
                    answers.append(json.loads(line[5:]))
                    if answers[-1].get("id") == 7:
                        return


def test_a_result_stored_while_a_stream_resumes_is_replayed() -> None:
    """The race behind a resumed stream that never got its result: the SDK tails a stream live
    only once the store's replay has returned, so the replay itself must follow a request's
    stream up to its response; the standalone GET stream (never answered) only catches up."""
    import anyio
    from mcp.server.streamable_http import GET_STREAM_KEY, EventMessage
    from mcp.types import JSONRPCNotification, JSONRPCResponse
    from support.procs import DEADLINE_S

    from flowrun.serve.mcp_events import MemoryEventStore

    store = MemoryEventStore()
    log = JSONRPCNotification(jsonrpc="2.0", method="notifications/message")
    result = JSONRPCResponse(jsonrpc="2.0", id=7, result={})
    sent: list[Any] = []
    replayed = anyio.Event()

    async def send(event: EventMessage) -> None:
        sent.append(event.message)
        replayed.set()

    async def main() -> None:
        priming = await store.store_event("7", None)
        standalone = await store.store_event(GET_STREAM_KEY, log)
        await store.store_event("7", log)
        with anyio.fail_after(DEADLINE_S):
            assert await store.replay_events_after(standalone, send) == GET_STREAM_KEY
            async with anyio.create_task_group() as group:
                group.start_soon(store.replay_events_after, priming, send)
                await replayed.wait()  # the replay caught up with the stream: now the result comes
                await store.store_event("7", result)

    anyio.run(main)
    assert sent == [log, result]


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
