"""`GET /v1/runs`: one page of the runs of the runs folder and of the batches beside it (each
batch's runs folder has an index of its own: the pages are merged, newest first), each with
its inputs. A batch item's run is listed as `BATCH:ITEM`, the id the runs API reads it by. In
queue mode the runs folder's own page comes from the queue's runs table (`own`)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

from flowrun.paths import is_dir
from flowrun.runtime.durable.runs_index import RunEntry, RunList, list_runs
from flowrun.serve.workflow_info import batch_names, batch_runs


def runs_page(
    runs_dir: Path,
    *,
    workflow: str | None,
    status: Sequence[str] | None,
    since: float | None,
    until: float | None,
    q: str | None,
    limit: int,
    offset: int,
    batches: bool = True,
    own: Callable[..., RunList] | None = None,
) -> tuple[list[dict[str, object]], int]:
    """The runs from `offset` on (at most `limit`) and how many match in all; `own` lists the
    runs folder itself (ServedRuns.listing(); None: its index)."""
    folders: list[tuple[Path, str | None]] = [(runs_dir, None)] if is_dir(runs_dir) else []
    if batches:
        folders += [(batch_runs(runs_dir, name), name) for name in batch_names(runs_dir)]
    found: list[tuple[RunEntry, str | None]] = []
    total = 0
    for folder, batch in folders:
        lister = own if batch is None and own is not None else functools.partial(list_runs, folder)
        page = lister(workflow=workflow, status=status, since=since, until=until, q=q, limit=offset + limit)
        total += page.total
        found += [(entry, batch) for entry in page]
    if len(folders) > 1:
        found.sort(key=lambda pair: (pair[0].started or 0.0, pair[0].id), reverse=True)
    return [_listed(entry, batch) for entry, batch in found[offset : offset + limit]], total


def _listed(entry: RunEntry, batch: str | None) -> dict[str, object]:
    out = {**entry.to_dict(), "inputs": entry.inputs}
    if batch is not None:
        out["id"], out["batch"] = f"{batch}:{entry.id}", batch
    return out
