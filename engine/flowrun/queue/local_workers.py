"""The worker processes `flowrun serve http --workers N` and `flowrun batch --workers N` start
beside themselves: `flowrun worker` each, on the same workflows, runs folder and queue, their
lines on the starter's stderr (or a file). They are stopped with SIGTERM when the starter stops,
so they drain (queue/worker.py): their runs end or are handed back to the queue, and resumed
when workers run again. A batch's workers also get SIGTERM if the batch itself dies (Linux's
parent-death signal): they serve that batch, and none is left running for good; a Ctrl-C
reaches the batch alone, which cancels its items through the queue (at once, where draining
workers would see the cancels only at their next heartbeat)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

KILL_AFTER_S = 15.0  # past the drain timeout, a worker that has not exited is killed


class LocalWorkers:
    def __init__(
        self,
        argv: list[str],
        count: int,
        cwd: Path | None = None,
        stderr: IO[str] | None = None,
        with_parent: bool = False,
    ) -> None:
        """`argv`: the arguments of `flowrun worker` (workflows and options); `stderr`: where
        their lines go (None: this process's stderr; given, their stdout too, so they hold no pipe
        of this process's open); `with_parent`: SIGTERM to each when this process dies, however
        it dies, and each in a session of its own, so a terminal's Ctrl-C reaches this process
        alone, which stops what the workers run through the queue, then the workers."""
        command = [sys.executable, "-m", "flowrun", "worker", *argv]
        preexec = _terms_with(os.getpid()) if with_parent and sys.platform == "linux" else None
        self.procs = [
            subprocess.Popen(
                command,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=stderr,
                stderr=stderr,
                preexec_fn=preexec,
                start_new_session=with_parent,  # a terminal's Ctrl-C reaches the parent only
            )
            for _ in range(count)
        ]

    @property
    def pids(self) -> list[int]:
        return [proc.pid for proc in self.procs]

    def stop(self, drain_s: float) -> None:
        """SIGTERM to each (they drain), then wait; one still there after the drain is killed."""
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=drain_s + KILL_AFTER_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies


def _terms_with(parent: int) -> Callable[[], None]:
    """A preexec_fn: the child gets SIGTERM when `parent` dies (at once if it died already).
    libc is loaded here, in the parent: the child only calls it (no dlopen after a fork)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    def preexec() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec
