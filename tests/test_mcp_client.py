"""MCP servers as tools: real servers written with the `mcp` package (stdio in the sandbox, and
streamable HTTP on 127.0.0.1), a roster whose agent calls their tools through both wire formats
of the scripted model server, and the failure cases (a tool that never answers, a server that
dies at start, one that never answers at start)."""

from __future__ import annotations

import json
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_test_server import HttpServer
from support.cli import run_cli
from support.env import WIRES, model_env
from support.paths import TESTS
from support.procs import pids_with, wait_for
from support.project import model, workflow, write_project
from support.runs import events as events_of
from support.wire_server import Reply, Script, WireServer, call

from flowrun.foreign_text import frame, inner

WORKER = "You are the MCP test worker"


@pytest.fixture(scope="session")
def http_server() -> Iterator[HttpServer]:
    server = HttpServer()
    yield server
    server.stop()


def python_binds() -> list[str]:
    """What the sandboxed server needs to run this interpreter and the `mcp` package."""
    return sorted({sys.prefix, sys.base_prefix})


def mcp_project(
    tmp_path: Path,
    servers: dict[str, Any],
    tools: list[Any],
    declared: str = "mcp_servers",
    name: str = "mcp_demo",
    worker: str = WORKER,
) -> Path:
    """A workflow NAME whose worker (prompt `worker`) uses `tools`, with `servers` under
    `declared` (mcp_servers, or a2a_agents for tests/test_a2a_client.py); the test MCP server is
    copied beside it."""
    shutil.copy(TESTS / "mcp_test_server.py", tmp_path / "mcp_test_server.py")
    claude = model("anthropic", model="claude-test", api_key_env="ANTHROPIC_API_KEY")
    spec = workflow(claude, name=name, inputs={"question": {}}, entry="worker", **{declared: servers})
    agents = {"worker": {"prompt": worker + ". Use the tools.", "max_steps": 12, "tools": tools}}
    return write_project(tmp_path, spec, agents, name=f"{name}.yaml")


def stdio_server(marker: str, *extra: str, **keys: Any) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": ["mcp_test_server.py", "--marker", marker, *extra],
        "sandbox": {"ro_binds": python_binds()},
        **keys,
    }


def run(
    tmp_path: Path, workflow: Path, server: WireServer, provider: str, extra: dict[str, str] | None = None
) -> tuple[int, str, Path]:
    env = {"FLOWRUN_RETRY_BASE_S": "0.01", **(extra or {})}
    args = [str(workflow), "--question", "q", "--runs-dir", str(tmp_path / "runs"), "--run-id", "r1"]
    env |= model_env(server, provider)
    if provider == "openai":
        args += ["--model", "openai:gpt-test"]
    proc = run_cli(args, cwd=tmp_path, env=env, timeout=180)
    return proc.returncode, proc.stdout + proc.stderr, tmp_path / "runs" / "r1"


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("provider", WIRES)
def test_agent_calls_stdio_and_http_servers(tmp_path: Path, provider: str, http_server: HttpServer) -> None:
    marker = f"mcp-marker-{uuid.uuid4().hex}"
    servers = {
        "calc": stdio_server(
            marker,
            timeout_s=2,
            tools=["add", "report", "picture", "fail", "sleep_forever", "where", "tamper"],
            env={"MCP_TEST_SECRET": "${MCP_TEST_SECRET_SOURCE}"},
        ),
        "web": {"url": http_server.url},
    }
    workflow = mcp_project(tmp_path, servers, ["calc", "web.echo", {"calc.add": {"approve": "always"}}])
    # the same tool listed twice (as part of `calc` and alone) is bound once
    replies = [
        Reply(tool_calls=[call("calc__add", a=2, b=40), call("web__echo", text="over http")]),
        Reply(tool_calls=[call("calc__report", city="Oslo"), call("calc__picture")]),
        Reply(tool_calls=[call("calc__fail", reason="bad input"), call("calc__sleep_forever")]),
        Reply(tool_calls=[call("calc__where"), call("calc__tamper", folder=str(tmp_path / "runs" / "r1"))]),
        Reply(text="All done."),
    ]
    with WireServer(Script({WORKER: replies})) as server:
        extra = {"MCP_TEST_SECRET_SOURCE": "declared-secret-value-123"}
        code, out, run_dir = run(tmp_path, workflow, server, provider, extra)
        requests = server.requests
    assert code == 0, out
    assert "Traceback" not in out
    offered = set(requests[0].tool_names)
    assert {"calc__add", "calc__report", "calc__picture", "web__echo"} <= offered
    assert "calc__secret_tool" not in offered  # hidden by the server's allowlist
    assert "web__add" not in offered  # only web.echo was listed
    results = {tool_id: (text, error) for tool_id, text, error in requests[-1].tool_results}
    texts = [text for text, _ in results.values()]
    # the result reached the model, framed as data naming the server and the tool
    assert frame("42", "MCP server 'calc', tool 'add'") in texts, texts
    texts = [inner(t) for t in texts]
    assert any("echo: over http" in t for t in texts)
    assert any('"temperature_c": 21' in t or "temperature_c" in t for t in texts)
    assert any("a red pixel" in t and "[image: image/png" in t for t in texts)
    assert any("[error TOOL_ERROR]" in t and "refused: bad input" in t for t in texts)
    assert any("[error TIMEOUT]" in t and "timeout_s=2" in t for t in texts)
    where = next(t for t in texts if t.startswith("cwd="))
    assert f"cwd={tmp_path.resolve()}" in where  # the folder of the declaring file
    assert f"home={run_dir.resolve()}/.home" in where  # in the sandbox: HOME is in the run folder
    # the declared env reached the server; its secret value never reaches the model
    assert "secret=[REDACTED]" in where
    # the engine's files, the lock and the recorded prompts are read-only to the server
    assert "changed: nothing" in texts, texts
    events = events_of(run_dir)
    prompts = [e for e in events if e["type"] == "agent_prompt"]
    assert {t["name"] for t in prompts[-1]["tools"]} >= {"calc__add", "web__echo"}  # recorded once bound
    assert "### calc__report" in (run_dir / "prompts" / "worker.md").read_text()
    by_tool = {e["tool"]: e["result"] for e in events if e["type"] == "tool_result"}
    assert by_tool["calc__report"]["data"]["structured"]["city"] == "Oslo"
    assert by_tool["calc__sleep_forever"]["error"]["code"] == "TIMEOUT"
    assert by_tool["calc__sleep_forever"]["stats"]["time_ms"] < 15_000
    assert by_tool["calc__fail"]["error"]["code"] == "TOOL_ERROR"
    # the stdio server (and its sandbox) stopped with the run
    assert wait_for(lambda: not processes_with(marker)), processes_with(marker)


def test_server_that_dies_at_start_gives_one_line(tmp_path: Path) -> None:
    workflow = mcp_project(tmp_path, {"broken": stdio_server("x", "--crash")}, ["broken"])
    with WireServer(Script({WORKER: [Reply(text="never asked")]})) as server:
        code, out, run_dir = run(tmp_path, workflow, server, "anthropic")
        assert server.requests == []  # no model call: the agent's tools were never complete
    assert code == 1, out
    assert "Traceback" not in out
    lines = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, out
    assert "MCP server 'broken'" in lines[0] and "did not start" in lines[0]
    assert "fatal: cannot read the config file tools.toml" in lines[0]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"


@pytest.mark.parametrize("provider", WIRES)
def test_a_stdio_server_that_dies_is_started_again_a_bounded_number_of_times(
    tmp_path: Path, provider: str
) -> None:
    marker = f"mcp-marker-{uuid.uuid4().hex}"
    workflow = mcp_project(tmp_path, {"calc": stdio_server(marker, tools=["pid", "die"])}, ["calc"])
    replies = [Reply(tool_calls=[call("calc__pid")])]
    for _ in range(4):  # the fourth death is one too many: the server stays down
        replies += [Reply(tool_calls=[call("calc__die")]), Reply(tool_calls=[call("calc__pid")])]
    with WireServer(Script({WORKER: [*replies, Reply(text="All done.")]})) as server:
        code, out, run_dir = run(tmp_path, workflow, server, provider)
    assert code == 0, out
    results = [(e["tool"], e["result"]) for e in events_of(run_dir) if e["type"] == "tool_result"]
    died = [r for tool, r in results if tool == "calc__die"]
    assert [r["error"]["code"] for r in died] == ["UNAVAILABLE"] * 4
    assert all("stopped during die" in r["error"]["message"] for r in died)
    assert all("fatal: the test server was told to die" in r["error"]["message"] for r in died)
    assert [("started again at the next call" in r["error"]["message"]) for r in died] == [True] * 3 + [False]
    pids = [r for tool, r in results if tool == "calc__pid"]
    assert [r["status"] for r in pids] == ["success"] * 4 + ["error"]
    assert len({r["text"] for r in pids[:4]}) == 4  # each restart is a new process
    assert "restarted 3 times already" in pids[-1]["error"]["message"]
    assert wait_for(lambda: not processes_with(marker)), processes_with(marker)


def test_an_http_server_that_refuses_names_the_status_the_url_and_the_fix(tmp_path: Path) -> None:
    import http.server
    import threading

    class Refusing(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_DELETE = do_POST

        def log_message(self, *args: object) -> None:
            return None

    refusing = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    threading.Thread(target=refusing.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{refusing.server_address[1]}/mcp"
    try:
        workflow = mcp_project(tmp_path, {"remote": {"url": url}}, ["remote"])
        with WireServer(Script({WORKER: [Reply(text="never asked")]})) as server:
            code, out, _ = run(tmp_path, workflow, server, "openai")
    finally:
        refusing.shutdown()
        refusing.server_close()
    assert code == 1 and "Traceback" not in out, out
    (line,) = [line for line in out.splitlines() if line.startswith("error:")]
    assert f"HTTP 401 from {url}" in line and "Authorization: Bearer" in line, line


def test_server_that_never_answers_at_start_times_out(tmp_path: Path) -> None:
    """The run fails at startup_timeout_s and stops the server then: it used to be given the
    CLOSE_TIMEOUT_S a running server gets to stop, as if it had answered, and the run ended
    10 s late. Measured by the run's own events: a measure the server takes needs it running
    when it is stopped, which a loaded machine may not have got to (it is stopped at 1 s)."""
    from flowrun.tools.remote.mcp_client import CLOSE_TIMEOUT_S

    token = f"flowrun-mute-{uuid.uuid4().hex[:12]}"  # the server, found on the host by its argv[0]
    server_decl = {"command": "bash", "args": ["-c", f"exec -a {token} sleep 300"], "startup_timeout_s": 1}
    workflow = mcp_project(tmp_path, {"mute": server_decl}, ["mute.add"])
    with WireServer(Script({WORKER: [Reply(text="never asked")]})) as server:
        code, out, run_dir = run(tmp_path, workflow, server, "openai")
    assert code == 1, out
    assert "MCP server 'mute'" in out and "startup_timeout_s=1" in out
    assert wait_for(lambda: not pids_with(token)), "the server was left running"
    at = {e["type"]: e["t"] for e in events_of(run_dir)}
    # the old grace alone came after the timeout: the run failing sooner than both is a bound
    # no load moves; the stop itself (input closed, SIGTERM 2 s later) is well inside it
    assert at["error"] - at["run_start"] < 1 + CLOSE_TIMEOUT_S, at


def test_missing_variable_is_one_line(tmp_path: Path) -> None:
    decl = {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${NO_SUCH_MCP_TOKEN}"}}
    workflow = mcp_project(tmp_path, {"remote": decl}, ["remote"])
    with WireServer(Script({WORKER: [Reply(text="never asked")]})) as server:
        code, out, _ = run(tmp_path, workflow, server, "anthropic")
    assert code == 1, out
    assert "${NO_SUCH_MCP_TOKEN} is not set" in out


# ---------------------------------------------------------------- validate


def validate(tmp_path: Path, *args: str) -> tuple[int, str]:
    proc = run_cli(["validate", *args, str(tmp_path)], cwd=tmp_path)
    return proc.returncode, proc.stdout + proc.stderr


def test_validate_reports_declaration_mistakes_at_their_line(tmp_path: Path) -> None:
    servers = {
        "calc": {"command": "python3"},
        "web": {"url": "http://127.0.0.1:1/mcp", "tools": ["echo"]},
    }
    mcp_project(
        tmp_path,
        servers,
        ["web.add", "wbe.echo", {"web.echo": {"sandbox": "off"}}, "calc"],
    )
    (tmp_path / ".mcp.json").write_text(
        '{\n  "mcpServers": {\n    "files": {\n      "comand": "npx",\n      "args": ["x"]\n    }\n  }\n}\n'
    )
    code, out = validate(tmp_path)
    assert code == 1, out
    assert ".mcp.json:3:14: error[invalid]: an MCP server needs exactly one of `command`" in out
    assert ".mcp.json:4:7: error[unknown-key]: unknown key 'comand'" in out
    assert "did you mean 'command'?" in out
    assert "MCP server 'web' does not allow tool 'add'" in out
    assert "unknown MCP server 'wbe' in 'wbe.echo'" in out and "did you mean 'web'?" in out
    assert "'web.echo' has no config key 'sandbox'" in out
    assert "Traceback" not in out


def test_validate_connect_starts_the_servers(tmp_path: Path, http_server: HttpServer) -> None:
    servers = {
        "calc": stdio_server("connect-check", tools=["add", "sub"]),
        "web": {"url": http_server.url},
        "broken": stdio_server("connect-check", "--crash"),
    }
    mcp_project(tmp_path, servers, ["calc.add", "web.ech", "web.echo"])
    code, out = validate(tmp_path)
    assert code == 0, out  # nothing to find without starting them
    code, out = validate(tmp_path, "--explain")
    assert "calc.add: required; network deny; read-only " in out  # a stdio server starts a process
    assert "web.echo" not in out.split("worker:", 1)[1].split("approve")[0]
    code, out = validate(tmp_path, "--connect", "--format", "github")
    assert code == 1, out
    assert "title=mcp-connect::MCP server 'calc' has no tool 'sub'" in out
    assert "MCP server 'web' has no tool 'ech'" in out and "did you mean 'echo'?" in out
    assert "MCP server 'broken' did not start" in out and "tools.toml" in out
    assert "'add'" not in out


def test_server_named_like_a_tool_or_an_agent_is_never_silently_shadowed(tmp_path: Path) -> None:
    servers = {"git": stdio_server("x"), "worker": stdio_server("y")}
    mcp_project(tmp_path, servers, ["git", "read_file"])
    code, out = validate(tmp_path)
    assert code == 1, out
    assert (
        "agents.d/worker.yaml:7:3: error[ambiguous-name]: 'git' names both the built-in tool 'git' and "
        "the MCP server 'git' (mcp_demo.yaml)" in out
    )
    assert "mcp_demo.yaml:" in out and (
        "warning[ambiguous-name]: MCP server 'git' has the name of the built-in tool 'git', which an "
        "agent's `git` entry means" in out
    )
    assert "MCP server 'worker' has the name of the agent 'worker' (agents.d/worker.yaml)" in out
    # a tool of the server named with its server is not ambiguous
    mcp_project(tmp_path, servers, ["git.add", "read_file"])
    code, out = validate(tmp_path)
    assert code == 0, out
    assert "error" not in out.replace("0 error(s)", "")
