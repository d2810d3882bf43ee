"""The queue's tables and every statement on them, written once for both databases
(queue/databases.py): the jobs (a run to start or resume; who holds it, until when), the
workers (their heartbeats), and the rate-limit schedules the workers share.

A job is `queued`, `taken` (a worker holds its lease until `lease_until`, renewed by the
worker's heartbeat) or `done`. A claim takes queued jobs and taken ones whose lease ran out (a
worker that died); a worker that lost its lease (another took the job) stops the run. A cancel
asked for a taken job is a flag its worker sees."""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from flowrun.queue.databases import Cursor, Database, Value, real, whole
from flowrun.queue.tables import RUNS_UPSERT, SCHEMA, SCHEMA_NAMES, STATE_SQL

SCHEMA_LOCK = 7_041_917_001  # Postgres advisory lock ids: the tables made once at a time
CLAIM_LOCK = 7_041_917_002  # claims under concurrency limits count the taken jobs one at a time
# (requests_at, tokens_at, now) -> the same after a call's booking, and when the call may start
Schedule = Callable[[float, float, float], tuple[float, float, float]]
RETRY_S = 1.0  # a job whose folder another process still holds is tried again this much later
JOB_COLUMNS = "run_id, workflow, action, request, lease, attempts"
FAIR_S = 2.0  # a job queued this long goes to any worker with room, past the fair share


@dataclass(frozen=True, slots=True)
class Job:
    """A run a worker took: start it (`action` start) or continue it from its folder (resume)."""

    run_id: str
    workflow: str
    action: str
    request: dict[str, object]  # start: {"inputs": ..., "options": RunOptions.to_dict()}
    lease: str  # this hold's token: renewals and the end name it
    attempts: int  # how many times a worker took it (1: the first)


@dataclass(frozen=True, slots=True)
class Look:
    """What a worker's look at the queue found."""

    waiting: bool  # a job it may take waits
    cancels: list[str]  # the leases of its runs whose cancel was asked
    next_expiry_s: float | None  # seconds until the first lease another worker holds runs out


@dataclass(frozen=True, slots=True)
class Outcome:
    """The queue's view of a run (`queued`, `running`, `done`); a done job's status and how
    long its last worker ran it."""

    state: str
    status: str | None = None
    run_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Limits:
    """How many runs may be taken at once over all workers: in all (`total`), per workflow."""

    total: int | None = None
    per_workflow: Mapping[str, int] | None = None

    @property
    def any(self) -> bool:
        return self.total is not None or bool(self.per_workflow)


@dataclass(frozen=True, slots=True)
class WorkerRow:
    id: str
    host: str
    pid: int
    concurrency: int
    workflows: list[str]
    started: float
    heartbeat: float
    state: str  # up, draining, stopped, or lost (no heartbeat for a lease: dead, or cut off)
    runs: list[str]  # the runs it holds
    age_s: float  # since its last heartbeat


class Store:
    """The queue's statements on one database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.made = False

    def prepare(self) -> Store:
        """The tables, made when missing (by one process at a time)."""
        if not self.made:
            if self.db.skip_locked and self._all_made():
                self.made = True
                return self
            with self.db.transaction() as cur:
                if self.db.skip_locked:
                    cur.run("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))
                for statement in SCHEMA:
                    cur.run(statement)
            self.made = True
        return self

    def _all_made(self) -> bool:
        """Postgres: whether every table and index exists. `CREATE INDEX IF NOT EXISTS` takes a
        SHARE lock on its table before it looks at the name, so a worker starting while runs are
        queued would deadlock against their inserts: look first, without locks."""
        with self.db.transaction(write=False) as cur:
            found = cur.run(f"SELECT {', '.join('to_regclass(?)' for _ in SCHEMA_NAMES)}", SCHEMA_NAMES)
        return all(found[0])

    # ------------------------------------------------------------ the API's side

    def enqueue(
        self,
        run_id: str,
        workflow: str,
        action: str,
        request: Mapping[str, object],
        row: Sequence[object] | None = None,
    ) -> bool:
        """Queue a run (a new one, or a stopped one to resume) with its runs-list `row`; False
        when its job is queued or taken already."""
        with self.db.transaction() as cur:
            if row is not None:
                cur.run(RUNS_UPSERT, tuple(row))
            count = cur.count(
                "INSERT INTO flowrun_jobs (run_id, workflow, action, request, state, enqueued) "
                "VALUES (?, ?, ?, ?, 'queued', {now}) ON CONFLICT (run_id) DO UPDATE SET "
                "action = excluded.action, request = excluded.request, state = 'queued', worker = NULL, "
                "lease = NULL, lease_until = NULL, cancel = 0, enqueued = excluded.enqueued, status = NULL "
                "WHERE flowrun_jobs.state = 'done'",
                (run_id, workflow, action, json.dumps(request, default=str)),
            )
            if count:
                self.db.notify(cur)
        return count > 0

    def note(self, row: Sequence[object] | None) -> None:
        """Write a run's row of the runs list (queue/runs_table.py)."""
        if row is not None:
            with self.db.transaction() as cur:
                cur.run(RUNS_UPSERT, tuple(row))

    def cancel(self, run_id: str) -> str | None:
        """Ask for a run to stop: a queued job is done at once (`queued` returned), a taken one
        is flagged for its worker (`taken`); None when the queue holds no such live job."""
        with self.db.transaction() as cur:
            found = cur.run("SELECT state FROM flowrun_jobs WHERE run_id = ?", (run_id,))
            state = found[0][0] if found else None
            if state == "queued":
                cur.run(
                    "UPDATE flowrun_jobs SET state = 'done', status = 'cancelled', cancel = 1, "
                    "ended = {now} WHERE run_id = ?",
                    (run_id,),
                )
            elif state == "taken":
                cur.run("UPDATE flowrun_jobs SET cancel = 1 WHERE run_id = ?", (run_id,))
                self.db.notify(cur)
            return state if state in ("queued", "taken") else None

    def states(self, run_ids: Sequence[str]) -> dict[str, str]:
        """The queue's view of runs: `queued` (waiting for a worker, or for another after its
        worker was lost), `running` (a worker's lease is live) or `done`; a run the queue never
        held is left out."""
        return {run_id: outcome.state for run_id, outcome in self.outcomes(run_ids).items()}

    def outcomes(self, run_ids: Sequence[str]) -> dict[str, Outcome]:
        """`states` with how each `done` job ended (a batch that follows its items reads both)."""
        if not run_ids:
            return {}
        marks = ", ".join("?" * len(run_ids))
        with self.db.transaction(write=False) as cur:
            rows = cur.run(
                f"SELECT run_id, {STATE_SQL}, status, ended - taken FROM flowrun_jobs j "
                f"WHERE run_id IN ({marks})",
                tuple(run_ids),
            )
        return {
            str(key): Outcome(str(state), None if end is None else str(end), real(took))
            for key, state, end, took in rows
        }

    # ------------------------------------------------------------ the workers' side

    def register(self, concurrency: int, lease_s: float, workflows: Iterable[str]) -> str:
        """A new worker's row; its id."""
        worker = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        names = json.dumps(sorted(workflows))
        with self.db.transaction() as cur:
            cur.run(
                "INSERT INTO flowrun_workers (id, host, pid, concurrency, lease_s, workflows, started, "
                "heartbeat, state) VALUES (?, ?, ?, ?, ?, ?, {now}, {now}, 'up')",
                (worker, socket.gethostname(), os.getpid(), concurrency, lease_s, names),
            )
        return worker

    def claim(
        self, worker: str, workflows: Sequence[str], n: int, lease_s: float, limits: Limits
    ) -> list[Job]:
        """Up to `n` jobs of `workflows` for `worker`, oldest first: queued ones and taken ones
        whose lease ran out, under the concurrency limits."""
        if n <= 0 or not workflows:
            return []
        marks = ", ".join("?" * len(workflows))
        with self.db.transaction() as cur:
            if limits.any and self.db.skip_locked:
                cur.run("SELECT pg_advisory_xact_lock(?)", (CLAIM_LOCK,))
            found = cur.run(
                f"SELECT run_id, workflow, {{now}} - enqueued FROM flowrun_jobs WHERE workflow IN ({marks}) "
                "AND ((state = 'queued' AND enqueued <= {now}) OR (state = 'taken' AND lease_until < {now})) "
                f"ORDER BY enqueued LIMIT ?{self.db.skip_locked}",
                (*workflows, n * 4 if limits.any else n),
            )
            rows = _fair(found, fair_share(cur, worker, workflows, len(found)))
            picked = _under_limits(cur, rows, n, limits) if limits.any else [r[0] for r in rows]
            jobs = []
            for run_id in picked:
                lease = uuid.uuid4().hex
                (row,) = cur.run(
                    "UPDATE flowrun_jobs SET state = 'taken', worker = ?, lease = ?, "
                    "lease_until = {now} + ?, attempts = attempts + 1, taken = {now} "
                    f"WHERE run_id = ? RETURNING {JOB_COLUMNS}",
                    (worker, lease, lease_s, run_id),
                )
                jobs.append(
                    Job(
                        str(row[0]),
                        str(row[1]),
                        str(row[2]),
                        json.loads(str(row[3])),
                        str(row[4]),
                        whole(row[5]),
                    )
                )
        return jobs

    def renew(self, worker: str, leases: Mapping[str, str], lease_s: float, state: str) -> dict[str, bool]:
        """The heartbeat: the worker's row, and the leases it holds ({lease: run id}) renewed;
        {lease: whether a cancel was asked} for those it still holds. A lease lost while its
        job is back in the queue (a claimer found the folder held by this worker, whose beat
        came late, and handed it back) is taken back: the run never left this worker. A lease
        missing from the answer is another worker's now."""
        with self.db.transaction() as cur:
            cur.run("UPDATE flowrun_workers SET heartbeat = {now}, state = ? WHERE id = ?", (state, worker))
            if not leases:
                return {}
            marks = ", ".join("?" * len(leases))
            rows = cur.run(
                "UPDATE flowrun_jobs SET lease_until = {now} + ? WHERE state = 'taken' AND worker = ? "
                f"AND lease IN ({marks}) RETURNING lease, cancel",
                (lease_s, worker, *leases),
            )
            held = {str(lease): bool(cancel) for lease, cancel in rows}
            for lease in set(leases) - set(held):
                back = cur.run(
                    "UPDATE flowrun_jobs SET state = 'taken', worker = ?, lease = ?, "
                    "lease_until = {now} + ?, taken = {now} WHERE run_id = ? AND state = 'queued' "
                    "RETURNING cancel",
                    (worker, lease, lease_s, leases[lease]),
                )
                if back:
                    held[lease] = bool(back[0][0])
        return held

    def look(self, worker: str, workflows: Sequence[str], holding: bool) -> Look:
        """What a worker looks at often, read without a write lock: whether a job of
        `workflows` waits, (`holding` runs) the leases of its runs whose cancel was asked, and
        when the first live lease another worker holds on one runs out."""
        marks = ", ".join("?" * len(workflows))
        with self.db.transaction(write=False) as cur:
            waiting = cur.run(
                f"SELECT 1 FROM flowrun_jobs WHERE workflow IN ({marks}) AND ((state = 'queued' AND "
                "enqueued <= {now}) OR (state = 'taken' AND lease_until < {now})) LIMIT 1",
                tuple(workflows),
            )
            cancels = (
                cur.run(
                    "SELECT lease FROM flowrun_jobs WHERE worker = ? AND state = 'taken' AND cancel = 1",
                    (worker,),
                )
                if holding
                else []
            )
            ((expiry,),) = cur.run(
                f"SELECT min(lease_until) - {{now}} FROM flowrun_jobs WHERE workflow IN ({marks}) AND "
                "state = 'taken' AND worker <> ? AND lease_until >= {now}",
                (*workflows, worker),
            )
        return Look(bool(waiting), [str(r[0]) for r in cancels], None if expiry is None else real(expiry))

    def finish(self, lease: str, status: str, note: Sequence[object] | None = None) -> bool:
        """The job's run ended `status` (its runs-table row `note`, in the same transaction);
        False when the lease was lost meanwhile."""
        with self.db.transaction() as cur:
            done = cur.count(
                "UPDATE flowrun_jobs SET state = 'done', status = ?, ended = {now}, lease_until = NULL "
                "WHERE lease = ? AND state = 'taken'",
                (status, lease),
            )
            if done and note is not None:
                cur.run(RUNS_UPSERT, tuple(note))
        return done > 0

    def hand_back(self, lease: str, delay_s: float = 0.0) -> bool:
        """Put a taken job back in the queue, to be resumed (a draining worker, a folder still
        held by another process: `delay_s` later)."""
        with self.db.transaction() as cur:
            back = cur.count(
                "UPDATE flowrun_jobs SET state = 'queued', action = 'resume', worker = NULL, lease = NULL, "
                "lease_until = NULL, enqueued = {now} + ? WHERE lease = ? AND state = 'taken'",
                (delay_s, lease),
            )
            if back:
                self.db.notify(cur)
        return back > 0

    def stopped(self, worker: str) -> None:
        with self.db.transaction() as cur:
            cur.run("UPDATE flowrun_workers SET state = 'stopped', heartbeat = {now} WHERE id = ?", (worker,))

    def workers(self, include_stopped: bool = False) -> list[WorkerRow]:
        """The live workers (`include_stopped`: also those stopped or lost), newest first, with
        the runs each holds."""
        with self.db.transaction() as cur:
            rows = cur.run(
                "SELECT id, host, pid, concurrency, workflows, started, heartbeat, state, {now} - heartbeat "
                "FROM flowrun_workers"
                + ("" if include_stopped else " WHERE state <> 'stopped'")
                + " ORDER BY started DESC"
            )
            held = cur.run("SELECT worker, run_id FROM flowrun_jobs WHERE state = 'taken' ORDER BY taken")
        runs: dict[str, list[str]] = {}
        for worker, run_id in held:
            runs.setdefault(str(worker), []).append(str(run_id))
        return [
            WorkerRow(
                str(r[0]),
                str(r[1]),
                whole(r[2]),
                whole(r[3]),
                json.loads(str(r[4])),
                real(r[5]),
                real(r[6]),
                str(r[7]),
                runs.get(str(r[0]), []),
                real(r[8]),
            )
            for r in rows
        ]

    # ------------------------------------------------------------ shared rate limits

    def rate_schedule(self, key: str, update: Schedule) -> float:
        """Run `update(requests_at, tokens_at, now) -> (requests_at, tokens_at, start)` on the
        model's schedule with its row locked; seconds to wait until `start`."""
        with self.db.transaction() as cur:
            cur.run(
                "INSERT INTO flowrun_rates (key, requests_at, tokens_at) VALUES (?, 0, 0) "
                "ON CONFLICT (key) DO NOTHING",
                (key,),
            )
            lock = " FOR UPDATE" if self.db.skip_locked else ""
            ((requests_at, tokens_at, now),) = cur.run(
                f"SELECT requests_at, tokens_at, {{now}} FROM flowrun_rates WHERE key = ?{lock}", (key,)
            )
            requests_at, tokens_at, start = update(real(requests_at), real(tokens_at), real(now))
            cur.run(
                "UPDATE flowrun_rates SET requests_at = ?, tokens_at = ? WHERE key = ?",
                (requests_at, tokens_at, key),
            )
        return max(0.0, start - real(now))


def fair_share(cur: Cursor, worker: str, workflows: Sequence[str], waiting: int) -> int:
    """How many of the `waiting` jobs `worker` may take now: enough to bring it to an even
    share of the runs held and waiting over the live workers of these workflows that have
    room (none when the others' shares cover them). A worker taking all it sees would leave
    the others idle while its own loop runs every run (a burst queued between two looks)."""
    rows = cur.run(
        "SELECT w.id, w.concurrency, w.workflows, (SELECT count(*) FROM flowrun_jobs j WHERE "
        "j.worker = w.id AND j.state = 'taken' AND j.lease_until >= {now}) FROM flowrun_workers w "
        "WHERE w.state = 'up' AND {now} - w.heartbeat < w.lease_s"
    )
    mine, held, peers = 0, 0, 1
    for other, concurrency, served, holds in rows:
        if other == worker:
            mine = whole(holds)
        elif whole(holds) < whole(concurrency) and not set(json.loads(str(served))).isdisjoint(workflows):
            held, peers = held + whole(holds), peers + 1
    share = -(-(held + mine + waiting) // peers)  # (rounded up)
    return max(0, share - mine)


def _fair(rows: list[tuple[Value, ...]], share: int) -> list[tuple[Value, ...]]:
    """The first `share` of the claimable `rows` (run_id, workflow, seconds queued), and any
    that waited FAIR_S or more (whoever sees them first takes them: a peer counted as having
    room may be stuck)."""
    kept: list[tuple[Value, ...]] = []
    for run_id, workflow, waited in rows:
        if share > 0 or real(waited) >= FAIR_S:
            kept.append((run_id, workflow))
            share -= 1
    return kept


def _under_limits(cur: Cursor, rows: list[tuple[Value, ...]], n: int, limits: Limits) -> list[str]:
    """The candidates that fit the limits, given the runs taken now (live leases)."""
    taken = cur.run(
        "SELECT workflow, count(*) FROM flowrun_jobs WHERE state = 'taken' AND lease_until >= {now} "
        "GROUP BY workflow"
    )
    per = {str(w): whole(c) for w, c in taken}
    total = sum(per.values())
    picked: list[str] = []
    for run_id, workflow in rows:
        cap = (limits.per_workflow or {}).get(str(workflow))
        if len(picked) >= n or (limits.total is not None and total >= limits.total):
            break
        if cap is not None and per.get(str(workflow), 0) >= cap:
            continue
        picked.append(str(run_id))
        per[str(workflow)] = per.get(str(workflow), 0) + 1
        total += 1
    return picked
