"""The cost and duration of earlier runs of a workflow, from the run folders of a runs folder
(run.json, usage.json and the first and last event's time): for the cost preview. Dry runs and
runs that have not ended are left out; a run with no priced model counts for its duration only."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from flowrun.pinned import open_regular, read_json_object

ENDED = frozenset({"completed", "failed", "max_steps", "budget_exceeded"})


@dataclass(slots=True)
class History:
    runs_dir: Path
    costs: list[float] = field(default_factory=list)  # USD, of the runs with a known cost
    durations: list[float] = field(default_factory=list)  # seconds

    @property
    def runs(self) -> int:
        return len(self.durations)

    def cost(self) -> tuple[float, float] | None:
        """(median, 90th percentile) of the cost, or None without a priced run."""
        return _spread(self.costs)

    def duration(self) -> tuple[float, float] | None:
        return _spread(self.durations)


def _spread(values: list[float]) -> tuple[float, float] | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0], values[0]
    return statistics.median(values), statistics.quantiles(values, n=10, method="inclusive")[8]


def run_history(runs_dir: Path, workflow: str) -> History:
    """The ended, not dry, runs of `workflow` (its `name`) in `runs_dir`."""
    found = History(runs_dir)
    if not runs_dir.is_dir():
        return found
    for run_dir in sorted(p for p in runs_dir.iterdir() if p.is_dir()):
        meta = read_json_object(run_dir / "run.json")
        options = meta.get("options")
        dry = options.get("dry_run") if isinstance(options, dict) else meta.get("dry_run")
        if meta.get("workflow") != workflow or meta.get("status") not in ENDED or dry:
            continue
        span = _span(run_dir / "events.jsonl")
        if span is None:
            continue
        found.durations.append(span)
        cost = read_json_object(run_dir / "usage.json").get("total_cost_usd")
        if isinstance(cost, int | float):
            found.costs.append(float(cost))
    return found


def _span(path: Path) -> float | None:
    """Seconds from the first event to the last (reads the first line and the file's tail)."""
    try:
        with open_regular(path, pin=False) as f:
            first = f.readline()
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 65536))
            tail = f.read().splitlines()
    except OSError:
        return None
    times = [_time(line) for line in (first, *(tail[-1:] if tail else []))]
    if None in times:
        return None
    start, end = times
    assert start is not None and end is not None
    return max(0.0, end - start)


def _time(line: bytes) -> float | None:
    try:
        decoded = json.loads(line)
    except (ValueError, RecursionError):
        return None
    value = decoded.get("t") if isinstance(decoded, dict) else None
    return float(value) if isinstance(value, int | float) else None
