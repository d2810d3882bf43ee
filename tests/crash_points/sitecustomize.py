"""Crash points for tests: with FLOWRUN_TEST_CRASH_ROOT and FLOWRUN_TEST_CRASH_AT=k in the
environment (and this folder on PYTHONPATH), the process dies at once (`os._exit(137)`, as a
SIGKILL leaves things: no cleanup, no flush) just before its k-th change under that folder: a
folder made, a file opened for writing, a rename, a removal, a truncation. Python's audit
hooks see each of them before it happens. With FLOWRUN_TEST_CRASH_WRITES=1 each write of the
run's event log (one per group of events, runtime/durable/event_log.py) is a change too: the
audit hooks do not see writes, so EventLog's write is wrapped as its module is imported.
FLOWRUN_TEST_CRASH_TRACE=1 lists them on stderr."""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

_ROOT = os.environ.get("FLOWRUN_TEST_CRASH_ROOT", "")
_AT = int(os.environ.get("FLOWRUN_TEST_CRASH_AT", "0") or 0)
_TRACE = bool(os.environ.get("FLOWRUN_TEST_CRASH_TRACE"))
_WRITES = bool(os.environ.get("FLOWRUN_TEST_CRASH_WRITES"))
_EVENT_LOG = "flowrun.runtime.durable.event_log"
_CHANGES = {"os.rename", "os.mkdir", "os.remove", "os.rmdir", "os.truncate", "os.link", "os.symlink"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_seen = 0


def _changes(event: str, args: tuple[Any, ...]) -> Any:
    """The path `event` changes, or None. A name relative to a folder's descriptor (the
    engine's writes beneath the workspace, flowrun/atomic_files.py) is joined to the folder's
    path; an open has no descriptor in its audit event, so those are seen at their rename."""
    if event == "open":
        path, mode, flags = args
        if isinstance(mode, str):
            return path if any(c in mode for c in "wax+") else None
        return path if (flags or 0) & _WRITE_FLAGS else None
    if event not in _CHANGES:
        return None
    path = args[0]
    folder = {"os.mkdir": 2, "os.rename": 2, "os.remove": 1, "os.rmdir": 1}.get(event)
    if folder is not None and len(args) > folder and isinstance(args[folder], int) and args[folder] >= 0:
        with contextlib.suppress(OSError):
            return os.path.join(os.readlink(f"/proc/self/fd/{args[folder]}"), os.fsdecode(path))
    return path


def _hook(event: str, args: tuple[Any, ...]) -> None:
    path = _changes(event, args)
    if path is None or isinstance(path, int):
        return
    _change(event, path)


def _change(event: str, path: Any) -> None:
    global _seen
    full = os.path.abspath(os.fsdecode(path))
    if full != _ROOT and not full.startswith(_ROOT + os.sep):
        return
    _seen += 1
    if _TRACE:
        os.write(2, f"crash point {_seen}: {event} {full}\n".encode())
    if _seen == _AT:
        os._exit(137)


def _count_writes(module: ModuleType) -> None:
    """Each write of a group of events (one with lines held back) is a change point."""
    log = module.EventLog
    write = log._write_pending

    def counted(self: Any) -> Any:
        if self._pending:
            _change("write", self.path)
        return write(self)

    log._write_pending = counted


class _EventLogFinder(importlib.abc.MetaPathFinder):
    """Finds the event log's module as usual, and wraps its write once it is loaded."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if name != _EVENT_LOG:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        load = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            load(module)
            _count_writes(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if _ROOT:
    sys.addaudithook(_hook)
    if _WRITES and _EVENT_LOG in sys.modules:  # imported already (tests/support/fork_server.py's child)
        _count_writes(sys.modules[_EVENT_LOG])
    elif _WRITES:
        sys.meta_path.insert(0, _EventLogFinder())
