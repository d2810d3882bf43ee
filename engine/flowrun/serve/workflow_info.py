"""What `serve http` tells about the workflows it serves (their inputs, for a form) and about the
batch folders beside its runs folder (`flowrun batch --out batches/NAME`): items, status counts,
and cost over time, read from batch.json, results.jsonl and the batch's runs index."""

from __future__ import annotations

import json
from pathlib import Path

from flowrun.api import Workflow
from flowrun.batch.folder import META, RESULTS, RUNS
from flowrun.errors import UsageError
from flowrun.pinned import read_json_object, read_whole
from flowrun.runtime.durable.run_folder import check_run_id
from flowrun.runtime.durable.runs_index import list_runs
from flowrun.states import NAMES

BATCHES = "batches"  # beside the runs folder


def workflow_info(workflow: Workflow) -> dict[str, object]:
    inputs = {
        name: {
            "type": spec.type,
            "description": spec.description,
            "required": spec.is_required,
            "default": spec.default,
            "choices": spec.choices,
        }
        for name, spec in workflow.inputs.items()
    }
    return {
        "name": workflow.name,
        "description": workflow.spec.description,
        "file": str(workflow.path.resolve()),
        "inputs": inputs,
        "output": workflow.spec.output,
    }


def batches_folder(runs_dir: Path) -> Path:
    return runs_dir.resolve().parent / BATCHES


def batch_runs(runs_dir: Path, name: str) -> Path:
    """The runs folder of the batch `name` (its items' runs: the HTTP API's `NAME:ITEM`)."""
    return batches_folder(runs_dir) / name / RUNS


def batch_names(runs_dir: Path) -> list[str]:
    """The batches beside the runs folder that have runs."""
    folder = batches_folder(runs_dir)
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if (p / META).is_file() and (p / RUNS).is_dir())


def batches(runs_dir: Path) -> list[dict[str, object]]:
    """Every batch folder under the runs folder's sibling `batches/`, newest first."""
    folder = batches_folder(runs_dir)
    if not folder.is_dir():
        return []
    found = [_summary(path) for path in folder.iterdir() if (path / META).is_file()]
    return sorted(found, key=lambda b: float(str(b.get("updated") or 0)), reverse=True)


def batch_detail(runs_dir: Path, name: str) -> dict[str, object] | None:
    """One batch: its summary, each item's result, and its cost over time (cumulative, as
    its items' runs ended)."""
    try:
        check_run_id(name)  # a folder name, never a path
    except UsageError:
        return None
    path = batches_folder(runs_dir) / name
    if not (path / META).is_file():
        return None
    items = _results(path)
    ended: list[tuple[float, float]] = []
    if (path / RUNS).is_dir():
        for entry in list_runs(path / RUNS):
            if entry.ended is not None and entry.status != "running":
                ended.append((entry.ended, entry.cost_usd or 0.0))
    total, points = 0.0, []
    for when, cost in sorted(ended):
        total += cost
        points.append({"t": when, "cost_usd": round(total, 6)})
    return {**_summary(path), "items": items, "cost_over_time": points, "states": NAMES}


def _summary(path: Path) -> dict[str, object]:
    meta = read_json_object(path / META)
    counts: dict[str, int] = {}
    cost = 0.0
    tokens = 0
    for item in _results(path):
        status = str(item.get("status"))
        counts[status] = counts.get(status, 0) + 1
        cost += _number(item.get("cost_usd"))
        tokens += int(_number(item.get("total_tokens")))
    return {
        "name": path.name,
        "status": meta.get("status"),
        "workflow_file": meta.get("workflow_file"),
        "updated": meta.get("updated"),
        "counts": counts,
        "ended": sum(counts.values()),  # items with a result (the pages show it, never sum)
        "items": sum(counts.values()),
        "total_tokens": tokens,
        "cost_usd": round(cost, 6),
    }


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _results(path: Path) -> list[dict[str, object]]:
    latest: dict[str, dict[str, object]] = {}
    try:
        text = read_whole(path / RESULTS).decode("utf-8", "replace")
    except OSError:
        return []
    for line in text.splitlines():
        try:
            raw = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(raw, dict) and isinstance(raw.get("id"), str):
            latest[raw["id"]] = raw
    return list(latest.values())
