"""A batch folder on disk:

    OUT/
      batch.json       what the batch runs (workflow and items files), its options, its last status
      results.jsonl    one line per item that ran: id, status, run folder, output, tokens, cost,
                       duration, error (appended as items end; one line per item, in the order
                       of the items file, once the batch stops)
      runs/<item id>/  each item's run folder, exactly as `flowrun run` makes it
      batch.lock       locked by the process running the batch (a second one into it is refused)

The folder is the batch's state: running the same batch again reads it to skip what is done."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TextIO

from flowrun.atomic_files import replace_file
from flowrun.errors import UsageError
from flowrun.paths import exists, refuse_long_name
from flowrun.runtime.durable.run_folder import LockHeld, drop_lock, take_lock
from flowrun.states import ENDED
from flowrun.types import as_plain

META = "batch.json"
RESULTS = "results.jsonl"
RUNS = "runs"
LOCK = "batch.lock"  # held (flock) by the process running the batch, removed as it ends
WORKERS_LOG = "workers.log"  # what worker processes wrote on stderr (batch/processes.py)
FINAL = ENDED
# a job stopped before its run began: reported to the tally, never recorded (the item stays as
# it was: not started, or its earlier result)
NOT_STARTED = "not_started"


@dataclass(slots=True)
class ItemResult:
    """One line of results.jsonl."""

    id: str
    line: int  # the item's line in the items file
    status: str  # the run's state (flowrun/states.py), or NOT_STARTED
    run_dir: str  # relative to the batch folder
    output: str | None = None  # the workflow's declared output, relative to the batch folder
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float | None = None
    duration_s: float = 0.0  # of the attempt that ended it
    error: str | None = None  # what went wrong, for any status but completed

    @property
    def ok(self) -> bool:
        return self.status == "completed"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, object] = as_plain(self)
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ItemResult:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in known})


class BatchFolder:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.runs = root / RUNS
        self._lock = threading.Lock()
        self._appending: TextIO | None = None  # results.jsonl, open while items end
        self._lock_fd: int | None = None  # batch.lock, while this process runs the batch
        self._made: list[Path] = []  # the folders claim() made (removed again if nothing ran)

    def run_dir(self, item_id: str) -> Path:
        return self.runs / item_id

    def claim(self) -> None:
        """Own the folder until release(): the same batch started twice at once (a CI job
        retried while the first still runs) is refused here, before anything runs, instead of
        both failing each other's items and mixing their results. The lock is a run folder's
        (runtime/durable/run_folder.py: the kernel's flock), so a killed batch holds none."""
        refuse_long_name(self.root, f"batch folder {self.root}", "choose another --out")
        self._refuse_foreign()
        self._made = [p for p in (self.root, *self.root.parents) if not exists(p)]
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self._lock_fd, _ = take_lock(self.root / LOCK)
        except LockHeld as held:
            raise UsageError(
                f"batch folder {self.root} is in use by {held.holder}: the same batch is running",
                "wait for it to end (then run the command again to resume it), or give another --out",
            ) from None
        except OSError as e:
            raise UsageError(
                f"cannot write the batch folder {self.root}: {e.strerror or e}", "choose another --out"
            ) from None

    @contextlib.contextmanager
    def claimed(self) -> Iterator[None]:
        self.claim()
        try:
            yield
        finally:
            self.release()

    def release(self) -> None:
        if self._lock_fd is None:
            return
        drop_lock(self.root / LOCK, self._lock_fd)
        self._lock_fd = None
        # the folders it made, if empty: it stopped before it began (a mistake in its items)
        with contextlib.suppress(OSError):
            for made in self._made:
                made.rmdir()

    def _refuse_foreign(self) -> None:
        """A folder that is there, not empty and not a batch's is the user's: left alone."""
        if exists(self.root / META) or not exists(self.root):
            return
        theirs = [p for p in self.root.iterdir() if p.name not in (LOCK, WORKERS_LOG)]  # not a batch's
        if theirs:
            raise UsageError(f"{self.root} exists and is not a batch folder", "choose another --out folder")

    def open(self, workflow: Path, items: Path, options: Mapping[str, object]) -> None:
        """Create the folder, or check that it holds a batch of the same workflow."""
        meta_path = self.root / META
        if meta_path.exists():
            try:
                meta = json.loads(meta_path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError, RecursionError):
                meta = {}
            recorded = meta.get("workflow_file")
            if recorded and Path(recorded) != workflow.resolve():
                raise UsageError(
                    f"{self.root} is a batch of {recorded}, not of {workflow}",
                    "choose another --out folder for this workflow",
                )
        else:
            self._refuse_foreign()
        self.runs.mkdir(parents=True, exist_ok=True)
        self.write_meta(workflow, items, options, "running")

    def write_meta(
        self, workflow: Path, items: Path, options: Mapping[str, object], status: str, **extra: object
    ) -> None:
        meta = {
            "workflow_file": str(workflow.resolve()),
            "items_file": str(items.resolve()),
            "options": options,
            "status": status,
            "updated": time.time(),
            **extra,
        }
        replace_file(self.root / META, json.dumps(meta, indent=2))

    def results(self) -> dict[str, ItemResult]:
        """The latest result of each item (a damaged or torn line is skipped)."""
        found: dict[str, ItemResult] = {}
        path = self.root / RESULTS
        if not path.exists():
            return found
        for text in path.read_text(encoding="utf-8").splitlines():
            try:
                raw = json.loads(text)
                result = ItemResult.from_dict(raw)
            except (json.JSONDecodeError, TypeError, AttributeError, RecursionError):
                continue
            found[result.id] = result
        return found

    def record(self, result: ItemResult) -> None:
        """Append one result; a crash loses at most the line being written."""
        line = json.dumps(result.to_dict(), ensure_ascii=False)
        with self._lock:
            if self._appending is None:  # kept open: one write per item, not open/write/close
                self._appending = (self.root / RESULTS).open("a", encoding="utf-8")
            self._appending.write(line + "\n")
            self._appending.flush()

    def compact(self, order: list[str]) -> None:
        """One line per item that ran, in the order of the items file."""
        latest = self.results()
        rank = {item_id: i for i, item_id in enumerate(order)}
        kept = sorted(latest.values(), key=lambda r: (rank.get(r.id, len(rank)), r.id))
        text = "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in kept)
        with self._lock:
            self._close_results()
            replace_file(self.root / RESULTS, text)

    def _close_results(self) -> None:
        if self._appending is not None:
            self._appending.close()
            self._appending = None
