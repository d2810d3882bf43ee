"""Running a child process for a tool: confined by the sandbox (see sandbox.py) unless the
tool's policy says otherwise, its own process group, output captured with a cap (head and tail
kept), timeout and cancellation kill the whole group (in the sandbox: its whole PID namespace),
and the result in the tool protocol's shape. Used by execute_shell, git and declared command
tools."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowrun.pinned import open_pinned
from flowrun.tools import sandbox
from flowrun.tools.base import ToolContext, error
from flowrun.tools.sandbox import Layout, SandboxUnavailable
from flowrun.types import ToolError, ToolResult

READ_CHUNK = 1 << 16
EOF_GRACE_S = 0.5  # after the main process exits, how long to wait for pipes held by its children
KILL_GRACE_S = 2.0  # SIGTERM, then SIGKILL after this long
POLL_S = 0.05
DEFAULT_MAX_OUTPUT_BYTES = 30_000
# In the sandbox, processes a command leaves behind die with its PID namespace when it exits;
# this wrapper tells whether there were any (the marker ends stderr and is taken out again).
LEFTOVER_MARK = b"\0flowrun:left-running\n"
LEFTOVER_CHECK = (
    '"$@"; rc=$?; for d in /proc/[0-9]*; do p=${d#/proc/}; '
    '[ "$p" = 1 ] || [ "$p" = $$ ] || { read -r s < "$d/stat" 2>/dev/null || continue; '
    'case "${s##*) }" in Z*|X*) continue;; esac; printf "\\000flowrun:left-running\\n" >&2; break; }; '
    "done; exit $rc"
)
EXEC_FAILED = re.compile(r"^bwrap: execvp (.+): ([^\n]+)$")  # the program could not be started inside
# quiet, non-interactive defaults that keep the run folder free of caches; the agent's `env`
# config overrides them
BASE_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "DEBIAN_FRONTEND": "noninteractive",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
}


@dataclass(slots=True)
class CappedOutput:
    """Keeps the first and last `limit // 2` bytes of a stream and counts what it dropped."""

    limit: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.limit // 2 - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            keep = self.limit - self.limit // 2
            self.tail = (self.tail + data)[-keep:] if keep else bytearray()

    @property
    def cut(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def text(self, name: str = "output") -> str:
        head = bytes(self.head).decode("utf-8", errors="replace")
        tail = bytes(self.tail).decode("utf-8", errors="replace")
        if not self.cut:
            return head + tail
        return f"{head}\n[... {self.cut} bytes cut from the middle of the {name} ...]\n{tail}"

    def strip_suffix(self, suffix: bytes) -> bool:
        """Remove `suffix` from the end of the stream, if it is there."""
        part = self.tail if self.tail else self.head
        if not part.endswith(suffix):
            return False
        del part[len(part) - len(suffix) :]
        self.total -= len(suffix)
        return True

    def reset(self) -> None:
        self.head, self.tail, self.total = bytearray(), bytearray(), 0


@dataclass(slots=True)
class ProcessOutcome:
    pid: int
    exit_code: int | None
    stdout: CappedOutput
    stderr: CappedOutput
    timed_out: bool = False
    leftovers_killed: bool = False


async def run_process(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str] | None,
    timeout_s: float,
    max_output_bytes: int,
    leftover_mark: bool = False,
    stdin: bytes | None = None,
    pass_fds: tuple[int, ...] = (),
) -> ProcessOutcome:
    """Run `argv` (no shell) to completion or timeout. Raises FileNotFoundError /
    PermissionError when the program cannot be started. `leftover_mark`: argv was wrapped by
    `launch(..., report_leftovers=True)` in the sandbox. `stdin`: what the process reads on
    its standard input (a hook's JSON), then end of file; None: /dev/null. `pass_fds`: as
    spawn_process."""
    proc = await spawn_process(argv, cwd, env, stdin=stdin is not None, pass_fds=pass_fds)
    outcome = ProcessOutcome(proc.pid, None, CappedOutput(max_output_bytes), CappedOutput(max_output_bytes))
    assert proc.stdout is not None and proc.stderr is not None
    readers = [
        asyncio.create_task(pump(proc.stdout, outcome.stdout)),
        asyncio.create_task(pump(proc.stderr, outcome.stderr)),
    ]
    if stdin is not None and proc.stdin is not None:
        readers.append(asyncio.create_task(_feed(proc.stdin, stdin)))
    try:
        outcome.timed_out = not await wait_exit(proc, timeout_s)
        if not outcome.timed_out:
            await asyncio.wait(readers, timeout=EOF_GRACE_S)
        # children the command left behind (or everything, on timeout) go with the group
        if outcome.timed_out or group_alive(proc.pid):
            outcome.leftovers_killed = not outcome.timed_out
            await kill_group(proc.pid)
        await asyncio.wait(readers, timeout=KILL_GRACE_S)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), KILL_GRACE_S)
    except BaseException:  # cancelled by the runtime: leave nothing running
        kill_group_now(proc.pid)
        await reap(proc)
        raise
    finally:
        for reader in readers:
            reader.cancel()
    outcome.exit_code = proc.returncode
    if leftover_mark and outcome.stderr.strip_suffix(LEFTOVER_MARK):
        outcome.leftovers_killed = not outcome.timed_out
    return outcome


async def _feed(sink: asyncio.StreamWriter, data: bytes) -> None:
    """Write `data` and close: a process that exits without reading it all is no error."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        sink.write(data)
        await sink.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        sink.close()
        await sink.wait_closed()


async def spawn_process(
    argv: list[str],
    cwd: Path,
    env: dict[str, str] | None,
    *,
    stderr: int = asyncio.subprocess.PIPE,
    stdin: bool = False,
    pass_fds: tuple[int, ...] = (),
) -> asyncio.subprocess.Process:
    """Start the process, whole: a cancel (Ctrl-C, SIGTERM, a budget stopping the others)
    that lands while asyncio is still setting it up must not leave it running unseen (or the
    setup waiting on it), so the start is shielded and a process started for a cancelled call
    is killed with its group at once. `pass_fds` go to the process and are closed here once it
    started (or failed to)."""
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,  # its own process group, so a kill reaches every child
            pass_fds=pass_fds,
        )
    )
    try:
        return await asyncio.shield(spawn)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):  # it failed to start, or another cancel came
            proc = await spawn
            kill_group_now(proc.pid)
            await reap(proc)
        raise
    finally:
        if pass_fds:
            with contextlib.suppress(BaseException):
                await asyncio.shield(spawn)  # (the child has its copies once it started)
            for fd in pass_fds:
                os.close(fd)


async def reap(proc: asyncio.subprocess.Process) -> None:
    """After a kill: wait (briefly, even while being cancelled) until the process is collected,
    so its transport is closed before the event loop goes away."""
    reaper = asyncio.ensure_future(asyncio.wait_for(proc.wait(), KILL_GRACE_S))
    with contextlib.suppress(BaseException):
        await asyncio.shield(reaper)


async def wait_exit(proc: asyncio.subprocess.Process, timeout_s: float) -> bool:
    """Wait until the main process exits; False on timeout. Polls `returncode` because
    `proc.wait()` (Python 3.11) also waits for the pipes, which a leftover child may hold open."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    delay = 0.002
    while proc.returncode is None:
        remaining = deadline - loop.time()
        if remaining <= 0:
            return False
        await asyncio.sleep(min(delay, remaining))
        delay = min(delay * 2, POLL_S)
    return True


async def pump(stream: asyncio.StreamReader, sink: CappedOutput) -> None:
    while chunk := await stream.read(READ_CHUNK):
        sink.feed(chunk)


def group_alive(pgid: int) -> bool:
    """Whether any process of the group still runs (zombies awaiting their reaper do not count)."""
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for entry in proc_dir.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) "
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False


async def kill_group(pgid: int, grace: float = KILL_GRACE_S) -> None:
    """SIGTERM the group, SIGKILL whatever is left after `grace` seconds."""
    if not _signal_group(pgid, signal.SIGTERM):
        return
    if await _gone(pgid, grace):
        return
    _signal_group(pgid, signal.SIGKILL)
    await _gone(pgid, grace)


async def _gone(pgid: int, seconds: float) -> bool:
    """Poll until no process of the group runs; False if some still do after `seconds`."""
    for _ in range(max(1, int(seconds / POLL_S))):
        if not group_alive(pgid):
            return True
        await asyncio.sleep(POLL_S)
    return not group_alive(pgid)


def kill_group_now(pgid: int) -> None:
    _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def outcome_result(outcome: ProcessOutcome, label: str, timeout: float) -> ToolResult:
    """The protocol result for a finished (or killed) process. A non-zero exit is an error
    (COMMAND_FAILED) whose text still carries the output, so the model can read it."""
    stdout, stderr = outcome.stdout.text("stdout"), outcome.stderr.text("stderr")
    cut = outcome.stdout.cut + outcome.stderr.cut
    parts = [stdout.rstrip("\n")] if stdout else []
    if stderr:
        parts.append("[stderr]\n" + stderr.rstrip("\n"))
    body = "\n".join(parts) or "(no output)"
    data: dict[str, object] = {
        "exit_code": outcome.exit_code,
        "stdout": stdout,
        "stderr": stderr,
        "truncated": cut > 0,
        "bytes_cut": cut,
        "pid": outcome.pid,
        "timed_out": outcome.timed_out,
    }
    notes = []
    if cut:
        notes.append(
            f"[output cut: {cut} bytes dropped from the middle; redirect the output to a file and "
            "read it with read_file or grep]"
        )
    if outcome.leftovers_killed:
        notes.append("[processes the command left running were stopped; use run_in_background for servers]")
    tail = ("\n" + "\n".join(notes)) if notes else ""
    if outcome.timed_out:
        message = f"{label} timed out after {timeout:g}s; its process group was killed"
        return _failure("TIMEOUT", message, f"{message}. Output so far:\n{body}{tail}", data)
    code = outcome.exit_code
    if code != 0:
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        return _failure("COMMAND_FAILED", f"{label} {how}", f"{label} {how}:\n{body}{tail}", data)
    return ToolResult(status="partial" if cut else "success", text=f"{body}{tail}", data=data)


def _failure(code: str, message: str, text: str, data: dict[str, Any]) -> ToolResult:
    return ToolResult(status="error", text=text, data=data, error=ToolError(code, message))


@dataclass(slots=True)
class Launch:
    """How to start one tool process: the argv (wrapped in bwrap when confined), its
    environment and working folder."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    confined: bool
    leftover_mark: bool = False  # stderr may end with LEFTOVER_MARK
    # descriptors the process gets (a sub-agent's writable folder, pinned); spawn_process hands
    # them over and closes them here
    pass_fds: tuple[int, ...] = ()

    async def run(
        self, timeout_s: float, max_output_bytes: int, stdin: bytes | None = None
    ) -> ProcessOutcome:
        """run_process with what the launch says: argv, folder, environment, descriptors."""
        return await run_process(
            self.argv,
            cwd=self.cwd,
            env=self.env,
            timeout_s=timeout_s,
            max_output_bytes=max_output_bytes,
            leftover_mark=self.leftover_mark,
            stdin=stdin,
            pass_fds=self.pass_fds,
        )


def launch(
    ctx: ToolContext,
    argv: list[str],
    *,
    cwd: Path | None = None,
    extra_env: dict[str, str] | None = None,
    keep_env: tuple[str, ...] = (),
    report_leftovers: bool = False,
) -> Launch:
    """`argv` as the tool's sandbox policy runs it. Raises SandboxUnavailable when the policy
    requires the sandbox and it cannot start (the reason says why and how to loosen it)."""
    policy = ctx.sandbox
    workdir = (cwd or ctx.cwd).resolve()
    settings = {**BASE_ENV, **{str(k): str(v) for k, v in (ctx.config.get("env") or {}).items()}}
    settings.update(extra_env or {})
    confined = policy.mode != "off"
    if confined:
        found = sandbox.probe()
        if not found.ok:
            if policy.mode == "required":
                raise SandboxUnavailable(f"{found.reason}; {sandbox.WAY_OUT}")
            confined = False  # auto: the run has warned once (sandbox_unavailable)
    if not confined:
        env = sandbox.tool_env(policy, home=None, extra=settings, keep=keep_env, confined=False)
        return Launch(argv, env, workdir, False)
    layout = sandbox_layout(ctx, workdir)
    missing = [p for p in (*policy.ro_binds, *policy.rw_binds) if not os.path.exists(p)]
    if missing:
        raise SandboxUnavailable(f"the sandbox binds {', '.join(missing)}, which does not exist")
    if not sandbox.visible(workdir, policy, layout):
        raise SandboxUnavailable(f"the working folder {workdir} is outside the sandbox")
    home = layout.home_dir
    home.mkdir(exist_ok=True)
    env = sandbox.tool_env(policy, home=str(home), extra=settings, keep=keep_env)
    assert found.binary is not None
    if report_leftovers:
        argv = ["/bin/sh", "-c", LEFTOVER_CHECK, "sh", *argv]
    pinned = _pin_writable(layout)
    wrapped = sandbox.bwrap_argv(found.binary, argv, policy, layout, env, pinned)
    return Launch(wrapped, env, workdir, True, report_leftovers, tuple(pinned.values()))


def _pin_writable(layout: Layout) -> dict[Path, int]:
    """A descriptor on each folder a sub-agent may write, opened pinned to its checked path, for
    bwrap to bind (sandbox.bwrap_argv): a folder a command swaps for a symlink after the check
    can then not be what the sandbox gets writable."""
    pinned: dict[Path, int] = {}
    try:
        for path in layout.writable or ():
            if path.is_relative_to(layout.root):
                pinned[path] = open_pinned(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        for fd in pinned.values():
            os.close(fd)
        raise SandboxUnavailable(
            f"cannot open {e.filename or path}, where this agent may write: {e}"
        ) from None
    return pinned


def sandbox_layout(ctx: ToolContext, cwd: Path) -> Layout:
    """The run folder read-write with the engine's files in it read-only, and the project's
    skills folders read-only (so skill scripts can run)."""
    root = ctx.workspace.resolve()
    run_dir = ctx.run_dir.resolve()
    # the engine's files wherever they show inside the root (also a run folder inside a --workdir)
    protected = tuple(
        folder / name.rstrip("/")
        for folder in dict.fromkeys((root, run_dir))
        if folder.is_relative_to(root)
        for name in sorted(ctx.protected)
        if (folder / name.rstrip("/")).exists() and not (folder / name.rstrip("/")).is_symlink()
    )
    home = None if run_dir == root else run_dir / sandbox.HOME_DIR
    skills = []
    for entry in ctx.search_path:
        for folder in ((entry / "skills").resolve(), (entry / ".claude" / "skills").resolve()):
            if folder.is_dir() and not folder.is_relative_to(root) and folder not in skills:
                skills.append(folder)
    writable = None
    if ctx.write_within is not None:
        inside = ctx.write_within.resolve()
        if not inside.is_relative_to(root):  # swapped for a symlink since the agent was called
            raise SandboxUnavailable(
                f"{ctx.write_within}, where this agent may write, now leads out of {root}"
            )
        writable = (inside, home or root / sandbox.HOME_DIR)
    return Layout(
        root=root, cwd=cwd, protected=protected, read_only=tuple(skills), writable=writable, home=home
    )


def exec_failure(outcome: ProcessOutcome) -> str | None:
    """Why a confined program could not be started ("No such file or directory", ...), or None.
    Outside the sandbox that is an OSError from the start instead."""
    found = EXEC_FAILED.match(outcome.stderr.text().strip())
    return found.group(2) if found and outcome.exit_code == 1 else None


async def run_confined(ctx: ToolContext, argv: list[str], timeout_s: float, label: str) -> ToolResult:
    """`argv` run to its end under the tool's sandbox policy (leftover processes reported), as
    a tool result: its output, or why it could not start. `label` names it in messages."""
    try:
        outcome = await launch(ctx, argv, report_leftovers=True).run(timeout_s, output_cap(ctx))
    except SandboxUnavailable as e:
        return unavailable(e)
    except OSError as e:
        return error("UNAVAILABLE", f"cannot start {argv[0]}: {e}")
    return outcome_result(outcome, label, timeout_s)


def unavailable(e: SandboxUnavailable) -> ToolResult:
    return ToolResult(
        status="error",
        text=f"the sandbox cannot start, so nothing was run: {e.reason}",
        error=ToolError("SANDBOX_UNAVAILABLE", e.reason),
    )


def output_cap(ctx: ToolContext) -> int:
    """Bytes kept of each output stream: config `max_output_bytes`, else the manifest limit."""
    value = (
        ctx.config.get("max_output_bytes") or ctx.limits.get("max_output_bytes") or DEFAULT_MAX_OUTPUT_BYTES
    )
    return max(256, int(value))


def capped(value: Any, default: float, ceiling: Any) -> float:
    """A requested number, defaulted and limited to a configured maximum."""
    number = float(value) if value else default
    if ceiling:
        number = min(number, float(ceiling))
    return max(number, 0.001)
