"""Worker processes forked from the batch's own process (the local backend over several
processes, batch/processes.py), instead of started as fresh interpreters.

A fresh worker spends about 1.5 s of CPU before its first item: the interpreter, flowrun, the
workflow's load and the SDK's import (the `openai` package alone is about 1 s). Forked, a worker
starts with all of it in memory: the batch's process imports the SDKs, the HTTP client and the
price table once (in a thread of its own that has ended before the first fork), then forks each
worker. Over 2 workers that is 1.5-2.5 ms of CPU less per item of a 1,000-item batch.

A fork copies only the thread that forks, so workers are forked only while the batch's process
has no other thread (the SDK imports `flowrun.load` started in the background are waited for; a
program with threads of its own gets fresh interpreters, as before, and imports nothing for
them), on Linux (the parent waits for each worker through a pidfd), and unless
FLOWRUN_BATCH_FORK=0. A forked worker runs the workflow as the batch loaded it. It keeps what
the process had open, as multiprocessing's `fork` start method does, except the other workers'
pipes (so each worker sees its input end when the batch closes it); its signal handlers and
exit handlers are reset to what a fresh worker has. `ps` and `top` show it as `flowrun-worker`."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import fcntl
import functools
import gc
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from flowrun import collector
from flowrun.api import Workflow
from flowrun.batch import protocol
from flowrun.batch.worker import exit_now, ignore_interrupt, run_forked, warm_imports
from flowrun.providers.clients import prefetch_done, prefetch_threads

FORK_ENV = "FLOWRUN_BATCH_FORK"  # "0": every worker a fresh interpreter
WORKER_NAME = b"flowrun-worker"  # the workers' name in ps and top (/proc/PID/comm)
FORK_FAILED = 70  # the exit status of a forked child that could not become a worker


def fork_allowed() -> bool:
    """Whether this system and settings allow forking workers (FLOWRUN_BATCH_FORK, Linux)."""
    if os.environ.get(FORK_ENV, "").strip() == "0" or not hasattr(os, "fork"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):  # not Linux, or a kernel before 5.3
        return False
    return True


def fork_possible(*, but_imports: bool = False) -> bool:
    """Whether a worker may be forked from this process now (see the module docstring); with
    `but_imports`, once the SDK imports flowrun started in the background have ended."""
    others = {thread for thread in threading.enumerate() if thread is not threading.main_thread()}
    if but_imports:
        others -= set(prefetch_threads())
    return not others and threading.current_thread() is threading.main_thread() and fork_allowed()


async def warm(workflow: Workflow, imports: bool = True) -> None:
    """Import what the workers' first calls need (with `imports`), once, here, after the SDK
    imports flowrun started in the background (`flowrun.load`'s head start) have ended: in a
    thread of its own (the loop goes on meanwhile), ended when this returns. A failure is left
    for the first call."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def finished() -> None:
        if not done.done():  # (cancelled meanwhile)
            done.set_result(None)

    def work() -> None:
        try:
            prefetch_done()
            if imports:
                warm_imports(workflow)
        finally:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(finished)

    thread = threading.Thread(target=work, name="flowrun-batch-warm", daemon=True)
    thread.start()
    try:
        await done
    finally:
        thread.join()


class ForkedProcess:
    """A forked worker as the pool sees a process (asyncio.subprocess.Process's part of it):
    its pipes, its exit status (negative: the signal that ended it) and kill()."""

    def __init__(self, pid: int, pidfd: int, pipes: Pipes, reaped: Callable[[ForkedProcess], None]) -> None:
        self.pid = pid
        self.stdin, self.stdout, self.stderr = pipes.stdin, pipes.stdout, pipes.stderr
        self.returncode: int | None = None
        self._pidfd = pidfd
        self._transports = pipes.transports
        self._reaped = reaped
        self._loop = asyncio.get_running_loop()
        self._exited: asyncio.Future[int] = self._loop.create_future()
        self._loop.add_reader(pidfd, self._reap)

    def open_fds(self) -> set[int]:
        """The descriptors this process holds for the worker now (a later fork closes them)."""
        found = set() if self.returncode is not None else {self._pidfd}
        for transport in self._transports:
            pipe = transport.get_extra_info("pipe")
            if pipe is not None and not pipe.closed:
                found.add(pipe.fileno())
        return found

    def _reap(self) -> None:
        """The pidfd is readable once the worker has exited: collect its status."""
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:  # reaped by someone else's waitpid(-1): its status is lost
            pid, status = self.pid, 255 << 8
        if pid == 0:
            return
        self._loop.remove_reader(self._pidfd)
        self.returncode = os.waitstatus_to_exitcode(status)
        os.close(self._pidfd)
        self._reaped(self)
        if not self._exited.done():
            self._exited.set_result(self.returncode)

    def kill(self) -> None:
        if self.returncode is None:  # not reaped: the pidfd still names this process
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)


@dataclass
class Pipes:
    """This process's ends of a worker's standard streams, on the loop."""

    stdin: asyncio.WriteTransport
    stdout: asyncio.StreamReader
    stderr: asyncio.StreamReader
    transports: tuple[asyncio.BaseTransport, ...]


class Forker:
    """Forks the workers of one batch, and knows the descriptors it holds for the live ones,
    which a later worker must not keep open (a worker sees the end of its input only once
    every copy of the pipe's writing end is closed)."""

    def __init__(self, workflow: Workflow) -> None:
        self.workflow = workflow
        self.live: set[ForkedProcess] = set()

    async def fork(self) -> ForkedProcess:
        """A new worker; OSError when the system cannot fork (nothing is left open then)."""
        fds = [*os.pipe(), *os.pipe(), *os.pipe()]
        stdin_r, stdin_w, stdout_r, stdout_w, stderr_r, stderr_w = fds
        held = {fd for worker in self.live for fd in worker.open_fds()}
        for stream in (sys.stdout, sys.stderr):  # nothing buffered here is written twice
            with contextlib.suppress(Exception):
                stream.flush()
        try:
            pid = os.fork()
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        if pid == 0:
            _become_worker(self.workflow, (stdin_r, stdout_w, stderr_w), {stdin_w, stdout_r, stderr_r, *held})
        for fd in (stdin_r, stdout_w, stderr_w):
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        try:
            pipes = await _connect(stdin_w, stdout_r, stderr_r)
        except BaseException:  # cancelled meanwhile: no worker is left behind, nor a zombie
            _kill_now(pid, pidfd)
            raise
        worker = ForkedProcess(pid, pidfd, pipes, self.live.discard)
        self.live.add(worker)
        return worker


def _kill_now(pid: int, pidfd: int) -> None:
    """Kill a worker that never started and reap it (a killed process ends at once: the wait
    is not the disk's or the network's)."""
    with contextlib.suppress(ProcessLookupError):
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    os.close(pidfd)


async def _connect(stdin: int, stdout: int, stderr: int) -> Pipes:
    """The worker's pipes on the loop; if this is interrupted, every one of them is closed."""
    loop = asyncio.get_running_loop()
    files = [os.fdopen(stdin, "wb", buffering=0)]
    files += [os.fdopen(fd, "rb", buffering=0) for fd in (stdout, stderr)]
    transports: list[asyncio.BaseTransport] = []
    try:
        writer, _ = await loop.connect_write_pipe(asyncio.Protocol, files[0])
        transports.append(writer)
        readers = []
        for pipe in files[1:]:
            reader = asyncio.StreamReader(limit=protocol.LINE_LIMIT)
            make = functools.partial(asyncio.StreamReaderProtocol, reader)
            read, _ = await loop.connect_read_pipe(make, pipe)
            transports.append(read)
            readers.append(reader)
    except BaseException:
        for transport in transports:
            transport.close()
        for file in files:  # (a transport's close closes its file later: closing twice is nothing)
            file.close()
        raise
    return Pipes(writer, readers[0], readers[1], tuple(transports))


def _become_worker(workflow: Workflow, fds: tuple[int, int, int], close: set[int]) -> NoReturn:
    """In the forked child: never returns into the parent's code (its loop, its stack)."""
    code = FORK_FAILED
    try:
        # what the parent made stays out of the collector's way: no finalizer of a parent's
        # object runs here (one could close a descriptor number this process reuses)
        gc.freeze()
        collector.tune()  # this process is flowrun's (the parent may be a program of yours)
        signal.set_wakeup_fd(-1)  # the parent's loop's, not this process's
        for signum in signal.valid_signals():
            with contextlib.suppress(OSError, ValueError, RuntimeError):
                if callable(signal.getsignal(signum)):
                    signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, ignore_interrupt)  # the parent decides, as for a fresh worker
        atexit._clear()  # the parent's exit handlers are the parent's
        with contextlib.suppress(OSError), open("/proc/self/comm", "wb") as comm:
            comm.write(WORKER_NAME)
        _pipes_on_standard_fds(fds, close)
        code = run_forked(workflow)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else FORK_FAILED
    except BaseException as e:  # nothing may unwind into the parent's stack
        with contextlib.suppress(Exception):
            os.write(2, f"forked worker could not run: {type(e).__name__}: {e}\n".encode())
    _end(code)


def _pipes_on_standard_fds(fds: tuple[int, int, int], close: set[int]) -> None:
    """The worker's pipes become its fds 0, 1 and 2 (moved above 2 first: a parent that runs
    with a standard fd closed may have been given one of those numbers for a pipe)."""
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 3) for fd in fds]
    for target, fd in enumerate(moved):
        os.dup2(fd, target)
    for fd in {*moved, *fds, *close} - {0, 1, 2}:
        with contextlib.suppress(OSError):
            os.close(fd)


def _end(code: int) -> NoReturn:
    """Exit as a fresh worker does (batch/worker.py), its threads finished first (a fresh one
    leaves that to the interpreter's shutdown, which would unwind the parent's stack here)."""
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            with contextlib.suppress(RuntimeError):
                thread.join()
    try:
        exit_now(code)
    finally:
        os._exit(code)  # whatever an exit handler raised: never back into the parent's stack
