"""The queue's tables, written once for both databases (queue/databases.py): the jobs (a run
to start or resume; who holds it, until when), the workers (their heartbeats), the rate-limit
schedules the workers share, and the runs list (the runs index's columns,
runtime/durable/runs_index.py), with the SQL that reads a run's state from its job."""

from __future__ import annotations

from flowrun.runtime.durable.runs_index import COLUMNS

JOBS = (
    """CREATE TABLE IF NOT EXISTS flowrun_jobs (
        run_id TEXT PRIMARY KEY,
        workflow TEXT NOT NULL,
        action TEXT NOT NULL,
        request TEXT NOT NULL,
        state TEXT NOT NULL,
        worker TEXT,
        lease TEXT,
        lease_until DOUBLE PRECISION,
        attempts INTEGER NOT NULL DEFAULT 0,
        cancel INTEGER NOT NULL DEFAULT 0,
        enqueued DOUBLE PRECISION NOT NULL,
        taken DOUBLE PRECISION,
        ended DOUBLE PRECISION,
        status TEXT)""",
    "CREATE INDEX IF NOT EXISTS flowrun_jobs_state ON flowrun_jobs (state, enqueued)",
    """CREATE TABLE IF NOT EXISTS flowrun_workers (
        id TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        concurrency INTEGER NOT NULL,
        lease_s DOUBLE PRECISION NOT NULL,
        workflows TEXT NOT NULL,
        started DOUBLE PRECISION NOT NULL,
        heartbeat DOUBLE PRECISION NOT NULL,
        state TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS flowrun_rates (
        key TEXT PRIMARY KEY,
        requests_at DOUBLE PRECISION NOT NULL,
        tokens_at DOUBLE PRECISION NOT NULL)""",
)
# the queue's view of a run from its job row `j` (a lease run out: back in the queue)
STATE_SQL = (
    "CASE WHEN j.state = 'queued' OR (j.state = 'taken' AND j.lease_until < {now}) THEN 'queued' "
    "WHEN j.state = 'taken' THEN 'running' ELSE 'done' END"
)


TYPES = {"is_run": "INTEGER", "mtime_ns": "BIGINT", "log_size": "BIGINT", "dry_run": "INTEGER"}
TYPES |= dict.fromkeys(("started", "ended", "sort_key", "cost_usd"), "DOUBLE PRECISION")
TYPES |= dict.fromkeys(("steps", "input_tokens", "output_tokens", "total_tokens", "pending"), "BIGINT")
DEFINED = ", ".join(f"{c} {TYPES.get(c, 'TEXT')}" + (" PRIMARY KEY" if c == "name" else "") for c in COLUMNS)
RUNS = (
    f"CREATE TABLE IF NOT EXISTS flowrun_runs ({DEFINED})",
    "CREATE INDEX IF NOT EXISTS flowrun_runs_order ON flowrun_runs (sort_key DESC, id DESC)",
)
RUNS_UPSERT = (
    f"INSERT INTO flowrun_runs ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))}) "
    "ON CONFLICT (name) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in COLUMNS[1:])
)
# the rows with the queue's state over the recorded one while the queue holds the run
LISTED = (
    f"(SELECT r.*, CASE WHEN j.run_id IS NULL THEN r.status ELSE {STATE_SQL} END AS queue_state "
    "FROM flowrun_runs r LEFT JOIN flowrun_jobs j ON j.run_id = r.name)"
)
VIEW = (
    f"(SELECT {', '.join(c for c in COLUMNS if c != 'status')}, "
    "CASE WHEN queue_state = 'done' THEN status ELSE queue_state END AS status FROM "
    f"{LISTED} AS joined)"
)


RUNS_INSERT = RUNS_UPSERT.split(" ON CONFLICT")[0] + " ON CONFLICT (name) DO NOTHING"
SCHEMA = JOBS + RUNS
SCHEMA_NAMES = [statement.split(" EXISTS ")[1].split()[0] for statement in SCHEMA]  # tables, indexes
