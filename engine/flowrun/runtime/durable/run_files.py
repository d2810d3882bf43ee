"""What a run writes in its own folder while it runs: its event log, and run.json and usage.json
replaced whole by name in the folder opened (pinned) with the log, so a tool that moved the
folder away and left a symlink cannot redirect them."""

from __future__ import annotations

import os
from pathlib import Path

from flowrun.atomic_files import replace_file, replace_in
from flowrun.events import Event
from flowrun.pinned import open_folder
from flowrun.redaction import Redactor
from flowrun.runtime.durable.event_log import EventLog, Subscriber
from flowrun.runtime.durable.ledger import Ledger


class RunFiles:
    def __init__(self, run_dir: Path, run_real: Path, redactor: Redactor, ledger: Ledger | None) -> None:
        self.run_dir = run_dir
        self.run_real = run_real  # the run folder without symlinks (Run.run_real)
        self.redactor = redactor
        self.ledger = ledger
        self.events: EventLog | None = None
        # the run folder, opened with its log before any tool runs: the engine's later writes go
        # by name in it
        self.folder: int | None = None
        self.subscribers: list[Subscriber] = []  # given to the log when it opens

    def open(self) -> None:
        self.folder = open_folder(self.run_real)
        self.events = EventLog(self.run_dir / "events.jsonl", self.redactor)
        self.events.subscribers.extend(self.subscribers)

    def replace(self, name: str, text: str) -> None:
        """A file of the run folder (run.json, usage.json) replaced whole: in the folder opened
        with the log, or by path before it is (nothing but the engine runs then)."""
        if self.folder is None:
            replace_file(self.run_dir / name, text)
        else:
            replace_in(self.folder, name, text)

    def close(self) -> None:
        """The log (its last flush) and the run folder's descriptor."""
        try:
            if self.events is not None:
                self.events.close()
        finally:
            if self.folder is not None:
                os.close(self.folder)
                self.folder = None

    def emit(self, event: Event) -> None:
        """Into the log once it is open; on resume, not an event the log already holds."""
        if self.events is None:
            return
        if self.ledger is not None and not self.ledger.should_write(event):
            return
        self.events.emit(event)
