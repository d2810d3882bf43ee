"""The run's event log: append-only JSON lines, secrets redacted. The loop emits typed events
(flowrun.events) and prints nothing; subscribers (the run log, the CLI's progress display, an
API caller's callback, the HTTP API's event feed) get each event after it is written.

Writes are grouped between effect boundaries: an event that comes before an effect (a model
request about to be sent, a tool call about to start, a call not safe to repeat) or that must
not be lost once it exists (a model's answer, the run's end) is written at once, with whatever
the run emitted before it, in one write; the events in between are written together when the
event loop next gets control (or with the next boundary, whichever comes first). So nothing an
effect depends on is ever held back when the effect happens, and a kill loses at most events
that no effect followed yet (resume makes them again). Events emitted off the loop's thread are
written at once."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flowrun.errors import RunError
from flowrun.events import (
    EVENT_TYPES,
    ApprovalEvent,
    DecisionEvent,
    DecisionPendingEvent,
    Event,
    HookEvent,
    MemoryWriteEvent,
    ModelRequestEvent,
    ModelResponseEvent,
    RunEndEvent,
    ToolCallEvent,
    ToolIntentEvent,
    UnknownEvent,
    UserMessageEvent,
    parse_event,
)
from flowrun.pinned import NotRegular, read_whole
from flowrun.redaction import Redactor, redact
from flowrun.runtime.durable.run_folder import not_a_record

__all__ = ["EventLog", "Redactor", "Subscriber", "read_events", "read_lines", "read_lines_strict", "redact"]

Subscriber = Callable[[Event], None]
# written at once, with the group before them: what comes before an effect (a request sent, a
# tool started), and what must not be lost once it exists (a model's answer, what a person or a
# hook decided, the run's end); see the module docstring and docs/explanation/durability.md
BOUNDARIES: tuple[type[Event], ...] = (
    ModelRequestEvent,
    ModelResponseEvent,
    ToolCallEvent,
    ToolIntentEvent,
    MemoryWriteEvent,
    ApprovalEvent,
    UserMessageEvent,
    HookEvent,
    DecisionPendingEvent,
    DecisionEvent,
    RunEndEvent,
)


class EventLog:
    def __init__(self, path: Path, redactor: Redactor | None = None) -> None:
        self.path = path
        self.redactor = redactor or Redactor()
        self.subscribers: list[Subscriber] = []
        self.writes = 0  # write calls made (bench/, and the docs' figures)
        self._lock = threading.Lock()
        self._seq = self._count_existing()
        self._file = path.open("ab", buffering=0)  # one write per group, nothing held in a buffer
        self._size = self._file.seek(0, 2)
        self._pending: list[tuple[Event, bytes]] = []  # emitted, not yet written
        self._scheduled: asyncio.AbstractEventLoop | None = None  # a flush is due on this loop
        self._failed: OSError | None = None  # a deferred write failed: the next emit raises it

    def _count_existing(self) -> int:
        if not self.path.exists():
            return 0
        with self.path.open("rb") as f:
            return sum(1 for _ in f)

    def emit(self, event: Event) -> Event:
        with self._lock:
            if self._failed is not None:
                failed, self._failed = self._failed, None
                raise failed
            self._seq += 1
            event.seq, event.t = self._seq, time.time()
            line = json.dumps(
                {"seq": event.seq, "t": event.t, **event.to_dict()}, ensure_ascii=False, default=str
            )
            # a lone surrogate (text from undecodable bytes) is written as its JSON escape
            data = (self.redactor.text(line) + "\n").encode("utf-8", "backslashreplace")
            self._pending.append((event, data))
            written = self._write_pending() if isinstance(event, BOUNDARIES) or not self._defer() else []
        self._notify(written)
        return event

    def _defer(self) -> bool:
        """Leave the line for a flush when this thread's event loop next gets control; False
        off a loop, or once the log is closed (write now: the emitter hears of it)."""
        if self._file.closed:
            return False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        if self._scheduled is None:
            self._scheduled = loop
            loop.call_soon(self.flush)
        return self._scheduled is loop

    def flush(self) -> None:
        """Write what is held back (the loop's callback, and close). A failure is kept and
        raised by the next emit: the events of the group are not in the log, the run stops
        with the error there."""
        with self._lock:
            self._scheduled = None
            try:
                written = self._write_pending()
            except OSError as e:
                self._failed = e
                return
        self._notify(written)

    def _notify(self, written: list[Event]) -> None:
        for event in written:
            for subscriber in self.subscribers:
                subscriber(event)

    def _write_pending(self) -> list[Event]:
        """Write every held line in one write, or none: when the disk is full (or the file size
        limit hit), the part written is cut off again, so the log stays one JSON object per line
        (and `seq` goes on from the last line written)."""
        if not self._pending:
            return []
        pending, self._pending = self._pending, []
        data = b"".join(line for _, line in pending) if len(pending) > 1 else pending[0][1]
        start = self._size
        try:
            view = memoryview(data)
            while view:
                written = self._file.write(view) or 0
                self.writes += 1
                view = view[written:]
        except OSError:
            self._seq = pending[0][0].seq - 1
            with contextlib.suppress(OSError):
                self._file.truncate(start)
            raise
        self._size = start + len(data)
        return [event for event, _ in pending]

    def close(self) -> None:
        if not self._file.closed:
            with contextlib.suppress(OSError):  # a run that could not write has said so already
                self.flush()
        with self._lock:
            if not self._file.closed:
                self._file.close()


def read_lines(path: Path) -> list[dict[str, Any]]:
    """All complete lines of a log as JSON objects, for reading (show, runs, export): a torn
    or damaged line is skipped."""
    events: list[dict[str, object]] = []
    try:
        data = read_whole(path)
    except (FileNotFoundError, NotRegular, IsADirectoryError):  # (no log, or not one flowrun wrote)
        return events
    for line in data.splitlines():
        try:
            raw = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the parser
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
    try:
        data = read_whole(path)
    except FileNotFoundError:
        return []
    except (NotRegular, IsADirectoryError) as e:  # (never waited on: a FIFO there would hang resume)
        raise not_a_record(path, e.kind if isinstance(e, NotRegular) else "a folder") from None
    lines = data.split(b"\n")
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
    except (ValueError, RecursionError):
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
