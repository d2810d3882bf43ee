"""Finding processes on the host by a token in their argv[0] (set with bash's `exec -a`):
sandboxed processes live in their own PID namespace, but the host's /proc shows them."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

DEADLINE_S = 30.0


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


def wait_for(check: Callable[[], object], deadline_s: float = DEADLINE_S) -> bool:
    """Poll `check` until it is true; False if it never was within the deadline."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return False
