"""The runs list of a queued deployment, kept in the queue's database beside the jobs, so every
API instance lists every run without reading the shared runs folder (a network mount): a row
per run, the runs index's own columns (runtime/durable/runs_index.py, made from the run folder
by `summarize`), written when a run is queued, cancelled in the queue, and when its worker lets
it go. The state shown is the queue's while it holds the run (`queued`, `running`), else the
one its folder recorded; the filters are the index's."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

from flowrun.queue.databases import whole
from flowrun.queue.store import Store
from flowrun.queue.tables import RUNS_INSERT, VIEW
from flowrun.runtime.durable.runs_index import (
    COLUMNS,
    RunEntry,
    RunList,
    When,
    entry_of,
    filters,
    list_runs,
    summarize,
)

NO_LIMIT = 2**63 - 1  # LIMIT for "all": SQLite has no LIMIT ALL, Postgres no LIMIT -1


def row_of(run_dir: Path) -> tuple[object, ...] | None:
    """The run folder's row (None when it is not a run's)."""
    row = summarize(run_dir, scan=True)
    return row if row is not None and row[1] else None


def note(store: Store, run_dir: Path) -> None:
    """Write the run folder's row (after its run.json changed)."""
    store.note(row_of(run_dir))


def adopt(store: Store, runs_dir: Path) -> int:
    """Add the rows of the runs folder's runs the table does not hold (runs made before the
    queue, or by `flowrun run`); how many. An API instance does this as it starts."""
    with contextlib.suppress(Exception):
        listed = list_runs(runs_dir).runs
        with store.db.transaction() as cur:
            known = {str(r[0]) for r in cur.run("SELECT name FROM flowrun_runs")}
        missing = [row for e in listed if e.id not in known and (row := row_of(e.path)) is not None]
        with store.db.transaction() as cur:
            for row in missing:
                cur.run(RUNS_INSERT, tuple(row))
        return len(missing)
    return 0


def list_queued_runs(
    store: Store,
    runs_dir: Path,
    *,
    workflow: str | None = None,
    status: str | Sequence[str] | None = None,
    since: When = None,
    until: When = None,
    q: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> RunList:
    """`list_runs`'s answer from the table: the same filters, newest first."""
    where, params = filters(workflow, status, since, until, q)
    page = f" LIMIT {NO_LIMIT if limit is None else int(limit)} OFFSET {int(offset)}"
    with store.db.transaction() as cur:
        ((total,),) = cur.run(f"SELECT count(*) FROM {VIEW} AS runs WHERE {where}", params)
        rows = cur.run(
            f"SELECT {', '.join(COLUMNS)} FROM {VIEW} AS runs WHERE {where} "
            f"ORDER BY sort_key DESC, id DESC{page}",
            params,
        )
    return RunList([entry_of(runs_dir, row) for row in rows], whole(total), offset, limit)


def entry(store: Store, runs_dir: Path, run_id: str) -> RunEntry | None:
    """One run's row, with the queue's state."""
    with store.db.transaction() as cur:
        rows = cur.run(f"SELECT {', '.join(COLUMNS)} FROM {VIEW} AS runs WHERE name = ?", (run_id,))
    return entry_of(runs_dir, rows[0]) if rows else None
