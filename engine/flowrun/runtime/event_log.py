"""The run's event log: append-only JSON lines, flushed per event, secrets redacted. The loop
emits typed events (flowrun.events) and prints nothing; subscribers (the run log, the CLI's
progress display, an API caller's callback) get each event after it is written."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flowrun.events import Event, parse_event
from flowrun.redaction import Redactor, redact

__all__ = ["EventLog", "Redactor", "Subscriber", "read_events", "read_lines", "redact"]

Subscriber = Callable[[Event], None]


class EventLog:
    def __init__(self, path: Path, redactor: Redactor | None = None) -> None:
        self.path = path
        self.redactor = redactor or Redactor()
        self.subscribers: list[Subscriber] = []
        self._lock = threading.Lock()
        self._seq = self._count_existing()
        self._file = path.open("a", encoding="utf-8")

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
            self._file.write(self.redactor.text(line) + "\n")
            self._file.flush()
        for subscriber in self.subscribers:
            subscriber(event)
        return event

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()


def read_lines(path: Path) -> list[dict[str, Any]]:
    """All complete lines of a log as JSON objects; a torn last line (crash mid-write) is
    skipped."""
    events: list[dict[str, Any]] = []
    if not path.exists():
        return events
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            raw = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(raw, dict):
            events.append(raw)
    return events


def read_events(path: Path) -> list[Event]:
    """All complete events of a log, typed."""
    return [parse_event(raw) for raw in read_lines(path)]
