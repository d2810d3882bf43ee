"""Shell tools with real bash processes: output, exit codes, policy, timeouts that leave no
orphans, output caps, background jobs. Process checks poll with generous deadlines."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.procs import DEADLINE_S, pids_with, wait_for

from flowrun.tools.base import RunState, ToolContext
from flowrun.tools.command_policy import check_command, describe
from flowrun.tools.shell import ShellJobs, execute_shell, get_shell_output, kill_shell
from flowrun.types import ToolResult

GONE_DEADLINE_S = DEADLINE_S
_states: list[RunState] = []  # every context's state, so jobs of a failed test get killed


def make_ctx(ws: Path, **config: object) -> ToolContext:
    ctx = ToolContext(workspace=ws, base_dir=ws, cwd=ws, run_dir=ws.parent, config=dict(config))
    _states.append(ctx.state)
    return ctx


def code(result: ToolResult) -> str | None:
    return result.error.code if result.error else None


async def group_gone(pgid: int, deadline_s: float = GONE_DEADLINE_S) -> bool:
    """Poll os.killpg(pgid, 0) until ProcessLookupError (the system reaps orphans lazily here)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        await asyncio.sleep(0.1)
    return False


@pytest.fixture
async def ws(tmp_path: Path) -> AsyncIterator[Path]:
    yield tmp_path
    for state in _states:
        await state.aclose()
    _states.clear()


# ---------------------------------------------------------------- foreground


async def test_output_exit_code_and_cwd(ws: Path) -> None:
    (ws / "sub").mkdir()
    ctx = make_ctx(ws)
    ctx.cwd = ws / "sub"
    result = await execute_shell(ctx, command="pwd; echo oops >&2")
    assert result.status == "success"
    assert result.data["exit_code"] == 0
    assert result.data["stdout"].strip() == str(ws / "sub")
    assert result.data["stderr"] == "oops\n"
    assert "[stderr]\noops" in result.text
    assert result.context["params_input"]["command"] == "pwd; echo oops >&2"


async def test_non_zero_exit_is_an_error_that_keeps_the_output(ws: Path) -> None:
    result = await execute_shell(make_ctx(ws), command="echo partial work; exit 3")
    assert result.status == "error" and code(result) == "COMMAND_FAILED"
    assert result.data["exit_code"] == 3
    assert "partial work" in result.text and "code 3" in result.text


async def test_env_config_reaches_the_command(ws: Path) -> None:
    result = await execute_shell(
        make_ctx(ws, env={"FLOWRUN_TEST_VALUE": "42"}), command="echo $FLOWRUN_TEST_VALUE"
    )
    assert result.data["stdout"] == "42\n"


@pytest.mark.parametrize(
    "command",
    ["rm -rf victim", "ls; rm -rf victim", "ls && rm -rf victim", "true || rm victim", "echo $(rm victim)"],
)
async def test_denied_commands_never_run(ws: Path, command: str) -> None:
    (ws / "victim").write_text("still here")
    result = await execute_shell(make_ctx(ws, deny=["rm *"]), command=command)
    assert code(result) == "PERMISSION_DENIED"
    assert "'rm *'" in result.text
    assert (ws / "victim").exists()


async def test_allow_list_requires_every_simple_command(ws: Path) -> None:
    ctx = make_ctx(ws, allow=["echo *", "ls"])
    assert (await execute_shell(ctx, command="echo hi | ls")).status == "success"
    result = await execute_shell(ctx, command="echo hi > made.txt; touch other.txt")
    assert code(result) == "PERMISSION_DENIED" and "touch other.txt" in result.text
    assert not (ws / "made.txt").exists()


async def test_timeout_kills_the_whole_group(ws: Path) -> None:
    started = time.monotonic()
    result = await execute_shell(make_ctx(ws), command="sleep 60 & sleep 60", timeout=1)
    assert code(result) == "TIMEOUT" and result.data["timed_out"] is True
    assert time.monotonic() - started < 30
    assert await group_gone(result.data["pid"])


async def test_timeout_is_capped_by_config(ws: Path) -> None:
    result = await execute_shell(make_ctx(ws, timeout=1), command="sleep 60", timeout=500)
    assert code(result) == "TIMEOUT"
    assert "1s" in result.text


async def test_leftover_background_children_are_stopped(ws: Path) -> None:
    result = await execute_shell(make_ctx(ws), command="sleep 60 & echo started")
    assert result.status == "success" and result.data["stdout"] == "started\n"
    assert "left running were stopped" in result.text
    assert await group_gone(result.data["pid"])


async def test_cancelled_call_kills_the_group(ws: Path) -> None:
    token = f"flowrun-c-{uuid.uuid4().hex}"
    command = f"(setsid bash -c 'exec -a {token} sleep 60' &); exec -a {token}-main sleep 60"
    task = asyncio.create_task(execute_shell(make_ctx(ws), command=command))
    assert await asyncio.to_thread(wait_for, lambda: len(pids_with(token)) == 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(wait_for, lambda: not pids_with(token))


async def test_output_cap_keeps_head_and_tail(ws: Path) -> None:
    command = "echo START; head -c 200000 /dev/zero | tr '\\0' 'x'; echo; echo END"
    result = await execute_shell(make_ctx(ws, max_output_bytes=1000), command=command)
    assert result.status == "partial"
    assert result.data["truncated"] is True and result.data["bytes_cut"] > 190_000
    assert result.data["stdout"].startswith("START")
    assert result.data["stdout"].rstrip().endswith("END")
    assert "bytes cut from the middle" in result.text and "read_file" in result.text
    assert len(result.text) < 2000


# ---------------------------------------------------------------- background


async def test_background_output_is_read_incrementally(ws: Path) -> None:
    ctx = make_ctx(ws)
    started = await execute_shell(ctx, command="echo one; sleep 0.3; echo two >&2", run_in_background=True)
    assert started.status == "success"
    bash_id = started.data["bash_id"]
    assert bash_id in ctx.state.of(ShellJobs).jobs
    done = await get_shell_output(ctx, bash_id=bash_id, block=True, timeout=20)
    assert done.data["running"] is False and done.data["exit_code"] == 0
    assert done.data["output"] == "one\ntwo\n"
    again = await get_shell_output(ctx, bash_id=bash_id, block=False)
    assert again.data["output"] == "" and "no new output" in again.text
    failing = await execute_shell(ctx, command="exit 4", run_in_background=True)
    failed = await get_shell_output(ctx, bash_id=failing.data["bash_id"], timeout=20)
    assert code(failed) == "COMMAND_FAILED" and failed.data["exit_code"] == 4
    await ctx.state.aclose()


async def test_kill_shell_stops_the_job_and_its_children(ws: Path) -> None:
    ctx = make_ctx(ws)
    started = await execute_shell(ctx, command="echo ready; sleep 60 & sleep 60", run_in_background=True)
    bash_id, pgid = started.data["bash_id"], started.data["pid"]
    seen = ""
    deadline = time.monotonic() + DEADLINE_S
    while "ready" not in seen and time.monotonic() < deadline:
        seen += (await get_shell_output(ctx, bash_id=bash_id, block=False)).data["output"]
        await asyncio.sleep(0.05)
    assert "ready" in seen
    running = await get_shell_output(ctx, bash_id=bash_id, block=True, timeout=0.2)
    assert running.data["running"] is True and running.status == "success"
    killed = await kill_shell(ctx, bash_id=bash_id)
    assert killed.status == "success" and killed.data["killed"] is True
    assert await group_gone(pgid)
    assert code(await get_shell_output(ctx, bash_id=bash_id)) == "NOT_FOUND"
    assert code(await kill_shell(ctx, bash_id=bash_id)) == "NOT_FOUND"


async def test_close_jobs_kills_everything(ws: Path) -> None:
    ctx = make_ctx(ws)
    pgids = []
    for _ in range(2):
        started = await execute_shell(ctx, command="sleep 60 & sleep 60", run_in_background=True)
        pgids.append(started.data["pid"])
    await ctx.state.aclose()
    assert ctx.state.of(ShellJobs).jobs == {}
    for pgid in pgids:
        assert await group_gone(pgid)


async def test_background_job_limit(ws: Path) -> None:
    ctx = make_ctx(ws, max_background_jobs=1)
    await execute_shell(ctx, command="sleep 60", run_in_background=True)
    second = await execute_shell(ctx, command="sleep 60", run_in_background=True)
    assert code(second) == "UNAVAILABLE" and "bash_1" in second.text
    await ctx.state.aclose()


async def test_background_commands_are_checked_too(ws: Path) -> None:
    ctx = make_ctx(ws, deny=["curl *"])
    result = await execute_shell(ctx, command="sleep 1; curl http://127.0.0.1:9", run_in_background=True)
    assert code(result) == "PERMISSION_DENIED" and ctx.state.find(ShellJobs) is None


# ---------------------------------------------------------------- command policy


@pytest.mark.parametrize(
    "command",
    [
        "ls; rm -rf /",
        "ls&&rm -rf /",
        "ls\nrm -rf x",
        "ls | xargs rm",
        'echo "$(rm -rf x)"',
        "echo `rm x`",
        "sudo rm x",
        "/bin/rm x",
        "FOO=1 rm x",
        "{ rm x; }",
        "bash -c 'ls; rm x'",
        "eval rm x",
        "timeout 5 rm x",
        "a#b; rm x",
        "cat <(rm x)",
    ],
)
def test_policy_finds_hidden_commands(command: str) -> None:
    denial = check_command(command, deny=["rm *"])
    assert denial is not None and denial.pattern == "rm *", command


@pytest.mark.parametrize("command", ["ls -la", "echo rm", "grep -r 'rm *' .", "cat firmware.txt"])
def test_policy_lets_harmless_commands_through(command: str) -> None:
    assert check_command(command, deny=["rm *"]) is None


def test_policy_allow_list_and_bare_patterns() -> None:
    allow = ["ls *", "git status", "pytest"]
    assert check_command("ls", allow) is None
    assert check_command("git status -s && pytest -q tests", allow) is None
    denial = check_command("git push", allow)
    assert denial is not None and "none of the allowed patterns" in describe(denial, allow)
    unparsable = check_command("echo 'open", allow)
    assert unparsable is not None and "quoting" in describe(unparsable, allow)
    assert check_command("echo 'open") is None  # no policy: bash reports the error itself
