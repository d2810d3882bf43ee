"""Crash points for tests: with FLOWRUN_TEST_CRASH_ROOT and FLOWRUN_TEST_CRASH_AT=k in the
environment (and this folder on PYTHONPATH), the process dies at once (`os._exit(137)`, as a
SIGKILL leaves things: no cleanup, no flush) just before its k-th change under that folder: a
folder made, a file opened for writing, a rename, a removal, a truncation. Python's audit
hooks see each of them before it happens. FLOWRUN_TEST_CRASH_TRACE=1 lists them on stderr."""

from __future__ import annotations

import os
import sys
from typing import Any

_ROOT = os.environ.get("FLOWRUN_TEST_CRASH_ROOT", "")
_AT = int(os.environ.get("FLOWRUN_TEST_CRASH_AT", "0") or 0)
_TRACE = bool(os.environ.get("FLOWRUN_TEST_CRASH_TRACE"))
_CHANGES = {"os.rename", "os.mkdir", "os.remove", "os.rmdir", "os.truncate", "os.link", "os.symlink"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_seen = 0


def _changes(event: str, args: tuple[Any, ...]) -> Any:
    """The path `event` changes, or None."""
    if event == "open":
        path, mode, flags = args
        if isinstance(mode, str):
            return path if any(c in mode for c in "wax+") else None
        return path if (flags or 0) & _WRITE_FLAGS else None
    return args[0] if event in _CHANGES else None


def _hook(event: str, args: tuple[Any, ...]) -> None:
    global _seen
    path = _changes(event, args)
    if path is None or isinstance(path, int):
        return
    full = os.path.abspath(os.fsdecode(path))
    if full != _ROOT and not full.startswith(_ROOT + os.sep):
        return
    _seen += 1
    if _TRACE:
        os.write(2, f"crash point {_seen}: {event} {full}\n".encode())
    if _seen == _AT:
        os._exit(137)


if _ROOT:
    sys.addaudithook(_hook)
