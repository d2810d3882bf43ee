"""The progress of a batch on stderr. On a terminal: a rich progress bar with the items done
of all, failed, running, the cost so far and the ETA (with -v, a line above it for each item
that ends). Otherwise: one line for each item that ends. Verbosity -1 shows nothing."""

from __future__ import annotations

import threading

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from flowrun.batch import BatchProgress, ItemResult


def _money(cost: float | None) -> str:
    return f"${cost:.4f}" if cost is not None else "$-"


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return "-:--"
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def item_line(progress: BatchProgress, result: ItemResult) -> str:
    done = progress.completed + progress.failed
    cost = f" {_money(result.cost_usd)}" if result.cost_usd is not None else ""
    line = f"[{done}/{progress.total}] {result.id} {result.status} {result.duration_s:.1f} s{cost}"
    return line + (f": {result.error}" if result.error and not result.ok else "")


def stats(progress: BatchProgress) -> str:
    return (
        f"{progress.failed} failed · {progress.running} running · {_money(progress.cost_usd)} · "
        f"ETA {_eta(progress.eta_s)}"
    )


class BatchDisplay:
    def __init__(self, verbosity: int, console: Console) -> None:
        self.verbosity = verbosity
        self.console = console
        self.live = console.is_terminal
        self._lock = threading.Lock()
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        if self.live:
            self.bar = Progress(
                TextColumn("batch"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[stats]}"),
                console=console,
                transient=False,
            )
            self.task = self.bar.add_task("batch", total=None, stats="")

    def update(self, progress: BatchProgress) -> None:
        with self._lock:
            if self.bar is not None and self.task is not None:
                if not self.bar.live.is_started:
                    # at the first update, not before: the bar's refresh thread must not exist
                    # yet when the batch forks its workers (batch/forked.py)
                    self.bar.start()
                done = progress.completed + progress.failed
                self.bar.update(self.task, total=progress.total, completed=done, stats=stats(progress))
                if progress.last is not None and self.verbosity > 0:
                    line = item_line(progress, progress.last)
                    self.bar.console.print(line, markup=False, highlight=False, soft_wrap=True)
            elif progress.last is not None:
                line = f"{item_line(progress, progress.last)} ({stats(progress)})"
                self.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def close(self) -> None:
        with self._lock:
            if self.bar is not None:
                self.bar.stop()
                self.bar = None


def make_display(verbosity: int, console: Console | None = None) -> BatchDisplay | None:
    if verbosity < 0:
        return None
    return BatchDisplay(verbosity, console or Console(stderr=True))
