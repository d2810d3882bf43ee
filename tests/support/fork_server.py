"""A fork server for the tests' command lines: `run_cli` (support/cli.py) hands each `flowrun ...`
to a process that has imported flowrun and the SDKs once, which forks a child per command. The
child is a real process (its own pid, exit status, signals, atexit handlers, file
descriptors) running the same `flowrun.cli.entry` the console script runs, with the test's
argv, environment, working folder and standard streams; only the interpreter start and the
imports (2.5 s of CPU for `anthropic`, 1 s for `openai`, per command) are skipped. What
depends on a fresh interpreter (which modules a command imports, a `PYTHONPATH` of its own,
`PYTHON*` settings, the locale) runs as a plain subprocess: see `forkable`.

The server: `python tests/support/fork_server.py SOCKET`, one per pytest process, started at its
first command line and stopped with it. Each request is one SEQPACKET message (pickled argv,
environment, folder) carrying the command's stdin, stdout and stderr; the answer is the
child's pid, then its exit code as `subprocess` gives it (negative: killed by that signal)."""

from __future__ import annotations

import atexit
import gc
import io
import locale
import os
import pickle
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

# run as a script too, so it finds the crash points itself (support.paths.CRASH_POINTS)
CRASH_POINTS = str(Path(__file__).resolve().parents[1] / "crash_points")
SCRIPT = str(Path(sys.executable).parent / "flowrun")
# settings read as an interpreter starts: a command given any of them gets a fresh one
FRESH_PREFIXES = ("PYTHON", "LC_")
FRESH_NAMES = {"LANG", "LANGUAGE"}
INT = struct.Struct("!i")


def preload() -> None:
    """What the commands import, imported once: every flowrun module, both SDKs."""
    import importlib
    import pkgutil

    import flowrun

    for module in pkgutil.walk_packages(flowrun.__path__, "flowrun."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    import anthropic
    import openai

    _ = (openai.AsyncOpenAI, anthropic.AsyncAnthropic)  # their lazily imported clients


def serve(path: str) -> None:
    preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes the select through the pipe
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    owner = os.getppid()
    waiting: dict[int, socket.socket] = {}
    gc.freeze()  # the imports' objects stay shared with the children, never collected by them
    print("ready", flush=True)
    while os.getppid() == owner:  # the pytest process gone: so is its server
        for key, _ in selector.select(timeout=1.0):
            if key.fileobj is wake_r:
                os.read(wake_r, 4096)
                continue
            conn, _ = listener.accept()
            data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
            pid = os.fork()
            if pid == 0:
                quiet_signals()
                selector.close()
                os.close(wake_r)
                os.close(wake_w)
                for sock in (listener, conn, *waiting.values()):
                    sock.close()
                child(pickle.loads(data), fds)
            for fd in fds:
                os.close(fd)
            conn.send(INT.pack(pid))
            waiting[pid] = conn
        reap(waiting)


def reap(waiting: dict[int, socket.socket]) -> None:
    while waiting:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = waiting.pop(pid, None)
        if conn is not None:
            try:
                conn.send(INT.pack(os.waitstatus_to_exitcode(status)))
            except OSError:  # the test stopped waiting (its timeout)
                pass
            conn.close()


def quiet_signals() -> None:
    """A child's signals as a fresh interpreter has them (the server's wake-up pipe let go)."""
    signal.set_wakeup_fd(-1)
    for sig, handler in (
        (signal.SIGCHLD, signal.SIG_DFL),
        (signal.SIGINT, signal.default_int_handler),
        (signal.SIGTERM, signal.SIG_DFL),
    ):
        signal.signal(sig, handler)


def child(request: dict[str, Any], fds: list[int]) -> None:
    """The command, as a fresh `flowrun` process would run it; never returns."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    import random

    random.seed()  # each fresh process has its own
    tempfile.tempdir = None  # found again from this environment's TMPDIR
    sys.argv = [SCRIPT, *request["args"]]
    sys.path[0] = os.path.dirname(SCRIPT)  # a console script's own folder, not tests/
    if request.get("crash_points"):
        load_crash_points()
    from flowrun.cli import entry

    entry()  # leaves with os._exit, or SystemExit when threads remain (the interpreter's exit)


def load_crash_points() -> None:
    """tests/crash_points/sitecustomize.py, which a fresh interpreter would have run first."""
    import importlib.util

    path = os.path.join(CRASH_POINTS, "sitecustomize.py")
    spec = importlib.util.spec_from_file_location("crash_points", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


class Server:
    """This pytest process's fork server, started at its first use."""

    lock = threading.Lock()
    proc: subprocess.Popen[bytes] | None = None
    path = ""

    @classmethod
    def address(cls) -> str:
        with cls.lock:
            if cls.proc is None or cls.proc.poll() is not None:
                folder = tempfile.mkdtemp(prefix="flowrun-fork-")
                cls.path = os.path.join(folder, "s")
                cls.proc = subprocess.Popen(
                    [sys.executable, __file__, cls.path],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    start_new_session=False,
                )
                assert cls.proc.stdout is not None
                if cls.proc.stdout.readline() != b"ready\n":
                    raise RuntimeError("the tests' fork server did not start")
                atexit.register(cls.stop, cls.proc, folder)
            return cls.path

    @staticmethod
    def stop(proc: subprocess.Popen[bytes], folder: str) -> None:
        proc.kill()
        proc.wait()
        shutil.rmtree(folder, ignore_errors=True)


def forkable(extra: dict[str, str]) -> bool:
    """Whether a command given `extra` environment runs the same in a fork as fresh."""
    if os.environ.get("FLOWRUN_TEST_FORK") == "0":
        return False
    for name, value in extra.items():
        if name == "PYTHONPATH" and value == CRASH_POINTS:
            continue
        if name.startswith(FRESH_PREFIXES) or name in FRESH_NAMES:
            return False
    return True


def run(
    args: list[str], cwd: Path | None, env: dict[str, str], extra: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """`subprocess.run([flowrun, *args], capture_output=True, text=True)`, through the server."""
    crash = extra.get("PYTHONPATH") == CRASH_POINTS
    request = {"args": args, "env": env, "cwd": str(cwd or os.getcwd()), "crash_points": crash}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as conn:
            conn.connect(Server.address())
            given = stdin()
            socket.send_fds(conn, [pickle.dumps(request)], [given, out.fileno(), err.fileno()])
            if given != 0:
                os.close(given)
            (pid,) = INT.unpack(conn.recv(INT.size))
            conn.settimeout(timeout)
            try:
                answer = conn.recv(INT.size)
            except TimeoutError:
                os.kill(pid, signal.SIGKILL)
                raise subprocess.TimeoutExpired([SCRIPT, *args], timeout, text(out), text(err)) from None
        if len(answer) != INT.size:
            raise RuntimeError("the tests' fork server stopped")
        (code,) = INT.unpack(answer)
        return subprocess.CompletedProcess([SCRIPT, *args], code, text(out), text(err))


def stdin() -> int:
    """The stdin a child of this process would inherit (/dev/null when it has none)."""
    try:
        os.fstat(0)
    except OSError:
        return os.open(os.devnull, os.O_RDONLY)
    return 0


def text(file: Any) -> str:
    """What the command wrote, read as `subprocess.run(text=True)` reads it."""
    file.seek(0)
    wrapper = io.TextIOWrapper(io.BytesIO(file.read()), encoding=locale.getpreferredencoding(False))
    return wrapper.read()


if __name__ == "__main__":
    serve(sys.argv[1])
