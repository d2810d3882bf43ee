"""The worker processes `flowrun serve http --workers N` starts beside itself: `flowrun worker`
each, on the same workflows, runs folder and queue, their lines on the server's stderr. They
are stopped with SIGTERM when the server stops, so they drain (queue/worker.py): their runs end
or are handed back to the queue, and resumed when workers run again."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO

KILL_AFTER_S = 15.0  # past the drain timeout, a worker that has not exited is killed


class LocalWorkers:
    def __init__(
        self, argv: list[str], count: int, cwd: Path | None = None, stderr: IO[str] | None = None
    ) -> None:
        """`argv`: the arguments of `flowrun worker` (workflows and options); `stderr`: where
        their lines go (None: this process's stderr)."""
        command = [sys.executable, "-m", "flowrun", "worker", *argv]
        self.procs = [
            subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL, stderr=stderr) for _ in range(count)
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
