"""The run's event log: append-only JSON lines, flushed per event, secrets redacted. The loop
emits typed events (flowrun.events) and prints nothing; subscribers (the run log, the CLI's
progress display, an API caller's callback) get each event after it is written."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flowrun.errors import RunError
from flowrun.events import EVENT_TYPES, Event, UnknownEvent, parse_event
from flowrun.redaction import Redactor, redact

__all__ = ["EventLog", "Redactor", "Subscriber", "read_events", "read_lines", "read_lines_strict", "redact"]

Subscriber = Callable[[Event], None]


class EventLog:
    def __init__(self, path: Path, redactor: Redactor | None = None) -> None:
        self.path = path
        self.redactor = redactor or Redactor()
        self.subscribers: list[Subscriber] = []
        self._lock = threading.Lock()
        self._seq = self._count_existing()
        self._file = path.open("ab", buffering=0)  # one write per line, nothing held back
        self._size = self._file.seek(0, 2)

    def _count_existing(self) -> int:
        if not self.path.exists():
            return 0
        with self.path.open("rb") as f:
            return sum(1 for _ in f)

    def emit(self, event: Event) -> Event:
        with self._lock:
            self._seq += 1
            event.seq, event.t = self._seq, time.time()
            line = json.dumps(
                {"seq": event.seq, "t": event.t, **event.to_dict()}, ensure_ascii=False, default=str
            )
            # a lone surrogate (text from undecodable bytes) is written as its JSON escape
            self._append((self.redactor.text(line) + "\n").encode("utf-8", "backslashreplace"))
        for subscriber in self.subscribers:
            subscriber(event)
        return event

    def _append(self, data: bytes) -> None:
        """Write one whole line, or none: when the disk is full (or the file size limit hit),
        the part written is cut off again, so the log stays one JSON object per line."""
        start = self._size
        try:
            view = memoryview(data)
            while view:
                written = self._file.write(view) or 0
                view = view[written:]
        except OSError:
            self._seq -= 1
            with contextlib.suppress(OSError):
                self._file.truncate(start)
            raise
        self._size = start + len(data)

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()


def read_lines(path: Path) -> list[dict[str, Any]]:
    """All complete lines of a log as JSON objects, for reading (show, runs, export): a torn
    or damaged line is skipped."""
    events: list[dict[str, object]] = []
    if not path.exists():
        return events
    for line in path.read_bytes().splitlines():
        try:
            raw = json.loads(line)
        except ValueError:  # not JSON, or not UTF-8
            continue
        if isinstance(raw, dict):
            events.append(raw)
    return events


def read_lines_strict(path: Path) -> list[dict[str, object]]:
    """The log as resume and replay need it: every line a JSON object. Only a torn last line
    (no newline: the process died mid-write) is left out; a damaged line anywhere else is a
    RunError naming it, because the run's record would have a gap. (A torn line an earlier
    version ended with a newline before resuming, so just before `run_resumed`, is the one
    exception.)"""
    return [raw for _, raw in _numbered_strict(path)]


def _numbered_strict(path: Path) -> list[tuple[int, dict[str, Any]]]:
    if not path.exists():
        return []
    lines = path.read_bytes().split(b"\n")
    lines.pop()  # b"" after the final newline, or a torn line
    events: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        raw = _object(line)
        if raw is None:
            following = _object(lines[number]) if number < len(lines) else None
            if following is not None and following.get("type") == "run_resumed":
                continue
            raise _damaged(
                path, number, f"this line is not a JSON object: {line[:60].decode('utf-8', 'replace')!r}"
            )
        events.append((number, raw))
    return events


def _damaged(path: Path, number: int, what: str) -> RunError:
    return RunError(
        f"{path}:{number}: the event log is damaged ({what})",
        "the file was changed after it was written: restore it, or start a new run "
        "(`flowrun show` still reads the intact lines)",
    )


def _object(line: bytes) -> dict[str, object] | None:
    try:
        raw = json.loads(line)
    except ValueError:
        return None
    return raw if isinstance(raw, dict) else None


def read_events(path: Path, *, strict: bool = False) -> list[Event]:
    """All complete events of a log, typed. `strict` (resume, replay): see read_lines_strict;
    also a line without an event type, an event whose fields cannot be read, and a `seq` that
    does not count up by one (a line missing, repeated or moved) are damage, named with their
    line. (An event type this version does not know, from a newer one, is kept as an
    UnknownEvent.)"""
    if not strict:
        return [parse_event(raw) for raw in read_lines(path)]
    events: list[Event] = []
    last_seq = 0
    for number, raw in _numbered_strict(path):
        event = parse_event(raw)
        kind = raw.get("type")
        if not isinstance(kind, str) or not kind:
            raise _damaged(path, number, "this line has no event type")
        if isinstance(event, UnknownEvent) and kind in EVENT_TYPES:
            raise _damaged(path, number, f"a {kind} event whose fields cannot be read")
        seq = raw.get("seq")
        # seq counts up by one; a resume may skip (a torn line an earlier version left)
        wanted = seq == last_seq + 1 or (kind == "run_resumed" and isinstance(seq, int) and seq > last_seq)
        if isinstance(seq, bool) or not isinstance(seq, int) or not wanted:
            raise _damaged(path, number, f"seq {seq!r} after {last_seq}: a line missing, repeated or moved")
        last_seq = seq
        events.append(event)
    return events
