"""Shell tools: execute_shell (foreground or background), get_shell_output, kill_shell.

Commands run with `bash -c` in ctx.cwd inside the tool's sandbox (see sandbox.py), each in its
own process group (in the sandbox: its own PID namespace) so a timeout or a kill reaches every
child. Background jobs live in the run's `ShellJobs` (ctx.state); the runtime closes it when the
run ends, so nothing outlives it. Per-agent config: `allow` /
`deny` command patterns (see command_policy), `timeout` (the most a call may ask for), `env`,
`max_output_bytes`, `max_background_jobs`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field

from flowrun.tools.base import ToolContext, error, finish_result, tool
from flowrun.tools.command_policy import check_command, config_patterns, describe
from flowrun.tools.process import (
    EOF_GRACE_S,
    KILL_GRACE_S,
    CappedOutput,
    capped,
    kill_group,
    launch,
    output_cap,
    pump,
    run_confined,
    spawn_process,
    unavailable,
    wait_exit,
)
from flowrun.tools.sandbox import SandboxUnavailable
from flowrun.types import ToolError, ToolResult

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_TIMEOUT_S = 600.0
DEFAULT_WAIT_S = 30.0
DEFAULT_MAX_JOBS = 8


@dataclass(slots=True)
class ShellJob:
    bash_id: str
    command: str
    proc: asyncio.subprocess.Process
    unread: CappedOutput  # stdout and stderr interleaved, since the last read
    started: float = field(default_factory=time.monotonic)
    reader: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self.proc.returncode is None


@dataclass
class ShellJobs:
    """A run's background jobs by id (`ctx.state.of(ShellJobs)`), ids numbered per run."""

    jobs: dict[str, ShellJob] = field(default_factory=dict)
    started: int = 0  # jobs started so far: the next id is bash_{started + 1}

    def new_id(self) -> str:
        self.started += 1
        return f"bash_{self.started}"

    async def aclose(self) -> None:
        """Kill every job (the runtime calls this when the run ends)."""
        await asyncio.gather(*(_stop(job) for job in self.jobs.values()), return_exceptions=True)
        self.jobs.clear()


@tool(idempotent=False)  # a command line may do anything
async def execute_shell(
    ctx: ToolContext,
    *,
    command: str,
    timeout: float = DEFAULT_TIMEOUT_S,  # noqa: ASYNC109 - the model-facing argument name
    run_in_background: bool = False,
) -> ToolResult:
    params: dict[str, object] = {
        "command": command,
        "timeout": timeout,
        "run_in_background": run_in_background,
    }
    started = time.perf_counter()
    if "\x00" in command:  # no program can receive it: the OS ends arguments at a NUL
        return finish_result(error("INVALID_PARAM", "the command contains a NUL byte"), params, started)
    allow, deny = config_patterns(ctx.config, "allow"), config_patterns(ctx.config, "deny")
    denial = check_command(command, allow, deny)
    if denial is not None:
        return finish_result(error("PERMISSION_DENIED", describe(denial, allow)), params, started)
    if not ctx.cwd.is_dir():
        return finish_result(
            error("NOT_FOUND", f"the working folder {ctx.cwd} does not exist"), params, started
        )
    if run_in_background:
        result = await _start_job(ctx, command)
    else:
        limit = capped(timeout, DEFAULT_TIMEOUT_S, ctx.config.get("timeout", DEFAULT_MAX_TIMEOUT_S))
        result = await run_confined(ctx, ["bash", "-c", command], limit, "the command")
    return finish_result(result, params, started)


async def get_shell_output(
    ctx: ToolContext,
    *,
    bash_id: str,
    block: bool = True,
    timeout: float | None = None,  # noqa: ASYNC109 - the model-facing argument name
) -> ToolResult:
    params: dict[str, object] = {"bash_id": bash_id, "block": block, "timeout": timeout}
    started = time.perf_counter()
    job = _jobs(ctx).get(bash_id)
    if job is None:
        return finish_result(_unknown(ctx, bash_id), params, started)
    if block and job.running:
        wait = capped(timeout, DEFAULT_WAIT_S, ctx.config.get("timeout", DEFAULT_MAX_TIMEOUT_S))
        await wait_exit(job.proc, wait)
    if not job.running and job.reader is not None:
        await asyncio.wait([job.reader], timeout=EOF_GRACE_S)
    return finish_result(_report(job, "is still running"), params, started)


async def kill_shell(ctx: ToolContext, *, bash_id: str) -> ToolResult:
    params: dict[str, object] = {"bash_id": bash_id}
    started = time.perf_counter()
    job = _jobs(ctx).pop(bash_id, None)
    if job is None:
        return finish_result(_unknown(ctx, bash_id), params, started)
    was_running = job.running
    await _stop(job)
    result = _report(job, "")
    result.text = ("Killed " if was_running else "Removed (it had already exited) ") + result.text
    if result.status == "error" and was_running:  # killed on request: not a failure of the command
        result.status, result.error = "success", None
    result.data["killed"] = was_running
    return finish_result(result, params, started)


def _jobs(ctx: ToolContext) -> dict[str, ShellJob]:
    return ctx.state.of(ShellJobs).jobs


async def _start_job(ctx: ToolContext, command: str) -> ToolResult:
    jobs = _jobs(ctx)
    running = [job.bash_id for job in jobs.values() if job.running]
    limit = int(ctx.config.get("max_background_jobs", DEFAULT_MAX_JOBS))
    if len(running) >= limit:
        return error(
            "UNAVAILABLE",
            f"{len(running)} background jobs are running ({', '.join(running)}); kill_shell one first",
        )
    try:
        how = launch(ctx, ["bash", "-c", command])
        proc = await spawn_process(
            how.argv, how.cwd, how.env, stderr=asyncio.subprocess.STDOUT, pass_fds=how.pass_fds
        )
    except SandboxUnavailable as e:
        return unavailable(e)
    except OSError as e:
        return error("UNAVAILABLE", f"cannot start bash: {e}")
    bash_id = ctx.state.of(ShellJobs).new_id()
    job = ShellJob(bash_id, command, proc, CappedOutput(output_cap(ctx)))
    assert proc.stdout is not None
    job.reader = asyncio.create_task(pump(proc.stdout, job.unread))
    jobs[bash_id] = job
    text = (
        f"Started in the background as {bash_id} (pid {proc.pid}). Read its output with "
        f"get_shell_output(bash_id={bash_id!r}); stop it with kill_shell(bash_id={bash_id!r})."
    )
    return ToolResult.ok(text, bash_id=bash_id, pid=proc.pid, running=True)


async def _stop(job: ShellJob) -> None:
    """Kill the job's whole group (the main process may be gone, its children not) and drain."""
    await kill_group(job.proc.pid)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(job.proc.wait(), KILL_GRACE_S)
    if job.reader is not None:
        await asyncio.wait([job.reader], timeout=KILL_GRACE_S)
        job.reader.cancel()


def _report(job: ShellJob, running_words: str) -> ToolResult:
    """The job's state plus the output it produced since the last read (then forgotten)."""
    output, cut = job.unread.text(), job.unread.cut
    job.unread.reset()
    elapsed = round(time.monotonic() - job.started, 1)
    code = job.proc.returncode
    if job.running:
        state = f"{job.bash_id} {running_words} (pid {job.proc.pid}, {elapsed}s)."
    elif code is not None and code < 0:
        state = f"{job.bash_id} ended by signal {-code} after {elapsed}s."
    else:
        state = f"{job.bash_id} exited with code {code} after {elapsed}s."
    body = f"New output:\n{output.rstrip()}" if output else "(no new output)"
    note = (
        f"\n[output cut: {cut} bytes dropped from the middle; read more often or log to a file]"
        if cut
        else ""
    )
    data = {
        "bash_id": job.bash_id,
        "running": job.running,
        "exit_code": code,
        "output": output,
        "truncated": cut > 0,
        "bytes_cut": cut,
        "pid": job.proc.pid,
    }
    text = f"{state}\n{body}{note}"
    if not job.running and code != 0:
        return ToolResult(
            status="error",
            text=text,
            data=data,
            error=ToolError("COMMAND_FAILED", f"{job.bash_id} exited with {code}"),
        )
    return ToolResult(status="partial" if cut else "success", text=text, data=data)


def _unknown(ctx: ToolContext, bash_id: str) -> ToolResult:
    known = ", ".join(_jobs(ctx)) or "none"
    return error("NOT_FOUND", f"no background job {bash_id!r} (known jobs: {known})")
