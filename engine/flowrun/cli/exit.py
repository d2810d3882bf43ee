"""How the command line leaves: once a command is done, its output is flushed, the exit
handlers have run (loggers, Ray, temporary folders) and every run file was closed by the run
itself, the process ends without the interpreter's module teardown, which after a run costs
more than the run's own start-up. A live non-daemon thread means someone still works: then the
process leaves the ordinary way, waiting for it."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

PIPE_CLOSED = 141  # 128 + SIGPIPE: what a shell reports for a command whose reader went away


def output_closed() -> bool:
    """Whether standard output is a pipe whose reader has gone (`flowrun ... | head -1`)."""
    try:
        import select

        poller = select.poll()
        poller.register(1, select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # (no poll on this system)
        return False


def exit_status(code: object) -> int:
    """What `sys.exit(code)` would make the process's exit status (a message goes to stderr)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def leave(code: object) -> NoReturn:
    status = exit_status(code)
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(status)
    run_exit_handlers: Callable[[], None] | None = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_handlers is not None:
        run_exit_handlers()  # logging.shutdown, ray.shutdown, tempfile cleanups, ...
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`flowrun ... | head`) loses nothing of ours
            pass
    os._exit(status)
