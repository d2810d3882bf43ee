"""The OS sandbox with the real bwrap and the real shell tool: what a command can see, read,
write and reach, what its environment holds, and that nothing it starts outlives the call's
timeout or the process that ran it (SIGTERM, SIGINT, SIGKILL). Process checks look for a unique
token in the host's /proc and poll with generous deadlines."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from support.procs import DEADLINE_S, pids_with, wait_for

from flowrun.tools import sandbox
from flowrun.tools.base import RunState, ToolContext
from flowrun.tools.sandbox import SandboxPolicy
from flowrun.tools.shell import execute_shell
from flowrun.types import ToolResult

ENGINE_FILES = frozenset({"events.jsonl", "run.json", "usage.json", "flowrun.log"})
USR = Path("/usr")
FAKE_KEYS = {
    "OPENAI_API_KEY": "sk-fake-openai-0123456789abcdef",
    "ANTHROPIC_API_KEY": "sk-ant-fake-0123456789abcdef",
    "TAVILY_API_KEY": "tvly-fake-0123456789abcdef",
    "MY_SERVICE_TOKEN": "token-fake-0123456789abcdef",
    "DB_PASSWORD": "password-fake-0123456789",
}
_states: list[RunState] = []


def make_ctx(ws: Path, policy: SandboxPolicy | None = None, **config: object) -> ToolContext:
    ctx = ToolContext(
        workspace=ws,
        base_dir=ws,
        cwd=ws,
        run_dir=ws,
        config=dict(config),
        protected=ENGINE_FILES,
        sandbox=policy or SandboxPolicy(),
    )
    _states.append(ctx.state)
    return ctx


@pytest.fixture(scope="module", autouse=True)
def _sandbox_works() -> None:
    """These tests run the real sandbox: a machine where it cannot start fails them."""
    found = sandbox.probe(refresh=True)
    assert found.ok, found.reason


@pytest.fixture
async def ws(tmp_path: Path) -> AsyncIterator[Path]:
    run = tmp_path / "run"
    run.mkdir()
    for name in ENGINE_FILES:
        (run / name).write_text('{"type": "run_start"}\n')
    (tmp_path / "neighbour.txt").write_text("next to the run folder\n")
    yield run
    for state in _states:
        await state.aclose()
    _states.clear()


async def sh(ctx: ToolContext, command: str, **kw: object) -> ToolResult:
    return await execute_shell(ctx, command=command, **kw)  # type: ignore[arg-type]


def orphan_command(token: str) -> str:
    """A setsid'd, double-forked sleeper (reparented away from the shell) plus a main sleeper."""
    return f"(setsid bash -c 'exec -a {token}-orphan sleep 300' &); exec -a {token}-main sleep 300"


# ---------------------------------------------------------------- files


async def test_secrets_home_and_neighbours_cannot_be_read(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".netrc").write_text("machine example.org password hunter2\n")
    monkeypatch.setenv("HOME", str(home))
    ctx = make_ctx(ws)
    shadow = await sh(ctx, "cat /etc/shadow")
    assert shadow.status == "error" and "Permission denied" in shadow.text
    assert (await sh(ctx, f"cat {home}/.netrc")).status == "error"
    assert (await sh(ctx, "ls /root")).status == "error"
    neighbour = await sh(ctx, "cat ../neighbour.txt")
    assert neighbour.status == "error" and "next to the run folder" not in neighbour.text
    passwd = await sh(ctx, "cat /etc/passwd")  # the system's ordinary files stay readable
    assert passwd.status == "success" and "root:" in passwd.text


async def test_writes_stay_in_the_run_folder(ws: Path, tmp_path: Path) -> None:
    ctx = make_ctx(ws)
    host_tmp = Path("/tmp") / f"flowrun-sandbox-{uuid.uuid4().hex}"
    result = await sh(
        ctx,
        f"echo a > made.txt; echo b > ../beside.txt; echo c > {host_tmp}; echo d > ~/in-home.txt; "
        "touch /usr/pwned 2>/dev/null || echo usr-is-read-only; echo $HOME $TMPDIR",
    )
    assert result.status == "success", result.text
    assert (ws / "made.txt").read_text() == "a\n"
    assert not (tmp_path / "beside.txt").exists()  # the folder above is a private tmpfs
    assert not host_tmp.exists()  # /tmp is private
    assert "usr-is-read-only" in result.text and not (USR / "pwned").exists()
    home, tmpdir = result.data["stdout"].split()[-2:]
    assert home == str(ws / ".home") and tmpdir == "/tmp"
    assert (ws / ".home" / "in-home.txt").read_text() == "d\n"


async def test_engine_files_cannot_be_changed(ws: Path) -> None:
    ctx = make_ctx(ws)
    before = {name: (ws / name).read_bytes() for name in ENGINE_FILES}
    for command in (
        'echo \'{"type": "forged"}\' >> events.jsonl',
        "echo '{}' > run.json",
        "rm usage.json",
        "mv flowrun.log gone.log",
        "ln events.jsonl linked && echo forged >> linked",
        "truncate -s 0 events.jsonl",
    ):
        result = await sh(ctx, command)
        assert result.status == "error", (command, result.text)
    assert {name: (ws / name).read_bytes() for name in ENGINE_FILES} == before
    readable = await sh(ctx, "cat events.jsonl")  # read-only, not hidden
    assert readable.status == "success" and "run_start" in readable.text


async def test_skills_folders_are_visible_read_only(ws: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    script = project / "skills" / "greet" / "scripts" / "hello.sh"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\necho hello from the skill\n")
    ctx = make_ctx(ws)
    ctx.search_path = [project]
    ran = await sh(ctx, f"bash {script}")
    assert ran.status == "success" and "hello from the skill" in ran.text
    assert (await sh(ctx, f"echo x >> {script}")).status == "error"
    assert (await sh(ctx, f"ls {project}")).data["stdout"].split() == ["skills"]


async def test_binds_from_the_policy(ws: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    data = tmp_path / "data"
    shared.mkdir()
    data.mkdir()
    (data / "in.txt").write_text("input\n")
    policy = SandboxPolicy(ro_binds=(str(data),), rw_binds=(str(shared),))
    ctx = make_ctx(ws, policy)
    result = await sh(ctx, f"cat {data}/in.txt > {shared}/out.txt")
    assert result.status == "success", result.text
    assert (shared / "out.txt").read_text() == "input\n"
    assert (await sh(ctx, f"echo x > {data}/in.txt")).status == "error"
    gone = await sh(make_ctx(ws, SandboxPolicy(ro_binds=(str(tmp_path / "gone"),))), "true")
    assert gone.error is not None and gone.error.code == "SANDBOX_UNAVAILABLE" and "gone" in gone.text


# ---------------------------------------------------------------- environment


async def test_env_shows_no_key(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in FAKE_KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/fake-base")
    monkeypatch.setenv("INNOCENT_LOOKING", FAKE_KEYS["OPENAI_API_KEY"])  # a secret value under any name
    monkeypatch.setenv("FLOWRUN_PASSED", "passed-through")
    policy = SandboxPolicy(env=("FLOWRUN_PASSED", "OPENAI_API_KEY", "INNOCENT_LOOKING"))
    ctx = make_ctx(ws, policy, env={"SERVICE_API_KEY": "set-by-a-manifest-0123", "LOG_LEVEL": "debug"})
    result = await sh(ctx, "env; cat /proc/self/environ /proc/1/environ /proc/1/cmdline | tr '\\0' '\\n'")
    assert result.status == "success", result.text
    for name, value in FAKE_KEYS.items():
        assert value not in result.text and name not in result.text
    for hidden in (
        "fake-base",
        "ANTHROPIC_BASE_URL",
        "INNOCENT_LOOKING",
        "SERVICE_API_KEY",
        "set-by-a-manifest",
    ):
        assert hidden not in result.text
    assert "FLOWRUN_PASSED=passed-through" in result.text and "LOG_LEVEL=debug" in result.text


def test_tool_env_rule() -> None:
    source = {"PATH": "/usr/bin", "LC_ALL": "C", "GITHUB_TOKEN": "ghp_0123456789", "USER": "me", "X": "1"}
    env = sandbox.tool_env(SandboxPolicy(env=("X", "GITHUB_TOKEN")), home="/run/.home", environ=source)
    assert env == {"PATH": "/usr/bin", "LC_ALL": "C", "X": "1", "HOME": "/run/.home", "TMPDIR": "/tmp"}


# ---------------------------------------------------------------- network


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(5)
                received.append(conn.recv(100))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], received
    stop.set()
    thread.join(5)
    server.close()


async def test_network_is_off_unless_allowed(ws: Path, listener: tuple[int, list[bytes]]) -> None:
    port, received = listener
    command = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo hello-listener >&3 && echo connected"
    denied = await sh(make_ctx(ws), command)
    assert denied.status == "error" and "connected" not in denied.data["stdout"]
    allowed = await sh(make_ctx(ws, SandboxPolicy(network="allow")), command)
    assert allowed.status == "success" and allowed.data["stdout"] == "connected\n"
    assert wait_for(lambda: received == [b"hello-listener\n"])


# ---------------------------------------------------------------- process lifetime


async def test_timeout_kills_setsid_and_double_forked_children(ws: Path) -> None:
    token = f"flowrun-t-{uuid.uuid4().hex}"
    result = await sh(make_ctx(ws), orphan_command(token), timeout=2)
    assert result.error is not None and result.error.code == "TIMEOUT"
    assert wait_for(lambda: not pids_with(token))


async def test_children_left_behind_die_when_the_command_ends(ws: Path) -> None:
    token = f"flowrun-l-{uuid.uuid4().hex}"
    result = await sh(make_ctx(ws), f"(setsid bash -c 'exec -a {token} sleep 300' &); echo started")
    assert result.status == "success" and "left running were stopped" in result.text
    assert wait_for(lambda: not pids_with(token))


async def test_background_jobs_end_with_the_run(ws: Path) -> None:
    token = f"flowrun-b-{uuid.uuid4().hex}"
    ctx = make_ctx(ws)
    started = await sh(ctx, orphan_command(token), run_in_background=True)
    assert started.status == "success"
    assert await asyncio.to_thread(wait_for, lambda: len(pids_with(token)) == 2)
    await ctx.state.aclose()
    assert await asyncio.to_thread(wait_for, lambda: not pids_with(token))


DRIVER = """
import asyncio, sys
from pathlib import Path
from flowrun.tools.base import ToolContext
from flowrun.tools.shell import execute_shell

ws, command, background = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
ctx = ToolContext(workspace=ws, base_dir=ws, cwd=ws, run_dir=ws)

async def main():
    await execute_shell(ctx, command=command, timeout=600, run_in_background=background)
    await asyncio.sleep(600)

asyncio.run(main())
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
def test_nothing_outlives_the_process_that_ran_the_tool(
    ws: Path, tmp_path: Path, sig: signal.Signals, background: bool
) -> None:
    token = f"flowrun-k-{uuid.uuid4().hex}"
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    errors = tmp_path / "driver.err"
    with errors.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, str(driver), str(ws), orphan_command(token), "1" if background else "0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        assert wait_for(lambda: len(pids_with(token)) == 2 or proc.poll() is not None)
        assert proc.poll() is None, errors.read_text()
        proc.send_signal(sig)
        proc.wait(DEADLINE_S)
        assert wait_for(lambda: not pids_with(token)), pids_with(token)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in pids_with(token):
            os.kill(pid, signal.SIGKILL)


# ---------------------------------------------------------------- when the sandbox cannot start


async def test_required_fails_closed_auto_and_off_run_unconfined(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(sandbox.BWRAP_ENV, str(tmp_path / "no-such-bwrap"))
    required = await sh(make_ctx(ws), "touch ran.txt")
    assert required.error is not None and required.error.code == "SANDBOX_UNAVAILABLE"
    assert "no-such-bwrap" in required.text and "--sandbox off" in required.text
    assert not (ws / "ran.txt").exists()
    for mode in ("auto", "off"):
        unconfined = await sh(make_ctx(ws, SandboxPolicy(mode=mode)), "cat ../neighbour.txt")  # type: ignore[arg-type]
        assert unconfined.status == "success" and "next to the run folder" in unconfined.text


def test_a_failing_binary_is_explained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv(sandbox.BWRAP_ENV, str(fake))
    found = sandbox.probe()
    assert not found.ok and found.binary == str(fake)
    assert "No permissions to create a new namespace" in found.reason
    assert "likely cause" in found.reason and "namespaces" in found.reason
    monkeypatch.setenv(sandbox.BWRAP_ENV, str(tmp_path / "missing"))
    missing = sandbox.probe()
    assert not missing.ok and "is not an executable file" in missing.reason


async def test_a_working_folder_outside_the_sandbox_is_refused(ws: Path, tmp_path: Path) -> None:
    ctx = make_ctx(ws)
    ctx.cwd = tmp_path
    result = await sh(ctx, "pwd")
    assert result.error is not None and result.error.code == "SANDBOX_UNAVAILABLE"
    assert "outside the sandbox" in result.text


def test_policy_description() -> None:
    assert SandboxPolicy().describe() == "required; network deny"
    assert SandboxPolicy(mode="off").describe() == "off (unconfined)"
    wide = SandboxPolicy(mode="auto", network="allow", ro_binds=("/data",), env=("LANGUAGE",))
    assert wide.describe() == "auto; network allow; read-only /data; env LANGUAGE"


if __name__ == "__main__":  # pragma: no cover
    asyncio.run(execute_shell(make_ctx(Path.cwd()), command="env"))
