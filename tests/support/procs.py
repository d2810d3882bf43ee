"""Watching processes on the host, for tests that act on them at a given moment: finding them
by a token in their argv[0] (set with bash's `exec -a`; sandboxed processes live in their own PID
namespace, but the host's /proc shows them), seeing one block reading its standard input, and
polling for a state with a deadline only a real hang reaches."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

DEADLINE_S = 120.0  # for a state the test waits for: long enough for a loaded machine
# the number of the read system call, as /proc/PID/task/TID/syscall shows it
READ_SYSCALL = {"x86_64": 0, "aarch64": 63, "riscv64": 63, "ppc64le": 3, "s390x": 3}


def pids_with(token: str) -> list[int]:
    """Host pids of live processes whose argv[0] starts with `token`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if cmdline.startswith(token.encode()) and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def reading_stdin(pid: int) -> bool:
    """Whether a thread of `pid` is blocked reading its standard input (in the read system
    call on fd 0): the moment a command waits for what is typed or piped to it."""
    machine = os.uname().machine
    number = READ_SYSCALL.get(machine)
    assert number is not None, f"the read system call's number on {machine} is not known here"
    try:
        threads = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return False
    for thread in threads:
        try:
            fields = (thread / "syscall").read_text().split()
        except OSError:
            continue
        if len(fields) > 1 and fields[0] == str(number) and int(fields[1], 16) == 0:
            return True
    return False


def wait_for(check: Callable[[], object], deadline_s: float = DEADLINE_S) -> bool:
    """Poll `check` until it is true; False if it never was within the deadline."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return False


def _children() -> dict[int, list[int]]:
    """Every live process's children, by parent pid (from /proc: their own sessions included)."""
    found: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        found.setdefault(ppid, []).append(int(entry.name))
    return found


def kill_tree(pid: int) -> None:
    """SIGKILL `pid` and every process it started, their descendants in other sessions too (a
    tool's shell runs in a session of its own): as a machine that is lost takes them all. The
    tree is frozen first (SIGSTOP), so nothing it starts meanwhile escapes, then killed."""
    stopped: list[int] = []
    tree = [pid]
    while tree:
        one = tree.pop()
        with contextlib.suppress(ProcessLookupError):
            os.kill(one, signal.SIGSTOP)
            stopped.append(one)
            tree.extend(_children().get(one, []))
    for one in stopped:
        with contextlib.suppress(ProcessLookupError):
            os.kill(one, signal.SIGKILL)
