"""The runs index: one SQLite file in a runs folder (`.index.sqlite`) with a row per run folder,
so listing and filtering thousands of runs reads neither their logs nor their run.json.

The run folders stay the source of truth; the index is only ever made from them. A listing
first brings it up to date cheaply: one scan of the runs folder and one `stat` per run folder.
A folder's modification time changes whenever a file is created, replaced or removed in it,
and the runtime replaces run.json (and takes and drops run.lock) at every change of state, so
a folder whose time matches its row is unchanged; a new folder is added, a changed one read
again, a removed one dropped. A run still going (run.json says `running`) is read again when
its log grew, and is `running` only while a live process holds its lock (`interrupted`
otherwise: killed, crashed). A missing, damaged or older index is rebuilt.

The runtime also updates a run's row when it writes run.json (`note_run`, which makes the
index when there is none); that update never fails a run (a locked or damaged index is left to
the next listing). A runs folder that cannot be written is listed from an index in memory."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import sqlite3
import stat
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from flowrun.errors import RunError, UsageError
from flowrun.paths import is_dir
from flowrun.pinned import open_regular, read_json_object, read_whole
from flowrun.states import NAMES, RENAMED, current_state, recorded_state
from flowrun.types import Usage

INDEX_NAME = ".index.sqlite"
# run_folder.LOCK_NAME, not imported: that module brings asyncio, and `flowrun runs` starts fast
LOCK_NAME = "run.lock"
SCHEMA_VERSION = 2  # 2: the state names of flowrun/states.py (cancelled, interrupted)
LIST_TIMEOUT_S = 5.0  # a listing waits this long for a writer of the index
NOTE_TIMEOUT_S = 0.2  # a run's own update gives up sooner: the next listing catches up
TAIL_BYTES = 65536
MODEL_RESPONSE = b'"type": "model_response"'  # as EventLog writes it (json.dumps separators)

COLUMNS = (
    "name",  # the folder's name
    "is_run",  # 0: a folder that is not a run's (kept so it is not looked at again)
    "mtime_ns",  # the folder's modification time when the row was made
    "log_size",  # events.jsonl's size when read (-1: not read; a running run is read again)
    "id",
    "workflow",
    "status",  # its state (flowrun/states.py): `running` only while its lock is held
    "recorded",  # as run.json (or the log's run_end) says, in today's names
    "dry_run",
    "started",
    "ended",
    "sort_key",  # started, else the folder's time: newest first
    "steps",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cost_usd",
    "pending",
    "batch",
    "inputs",  # JSON
    "options",  # JSON
    "search",  # lower-cased id, workflow and inputs, for `q`
)
DEFINED = ", ".join(c + (" TEXT PRIMARY KEY" if c == "name" else "") for c in COLUMNS)
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS runs ({DEFINED});
CREATE INDEX IF NOT EXISTS runs_order ON runs (is_run, sort_key DESC, id DESC);
CREATE INDEX IF NOT EXISTS runs_workflow ON runs (workflow);
CREATE INDEX IF NOT EXISTS runs_status ON runs (status);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
"""
UPSERT = f"INSERT OR REPLACE INTO runs ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
SHOWN = ", ".join(COLUMNS[4:21]) + ", name"


@dataclass(frozen=True, slots=True)
class RunEntry:
    """One run as the index lists it (`flowrun.list_runs`, `GET /v1/runs`)."""

    id: str
    path: Path
    workflow: str
    status: str  # its state (flowrun/states.py): running while a process holds it, ...
    recorded_status: str  # as it records: `running` for a run that was killed or crashed
    dry_run: bool
    started: float | None  # epoch seconds of its first event
    ended: float | None  # of its last event, once it is no longer running
    steps: int  # model calls over all agents
    input_tokens: int
    output_tokens: int
    total_tokens: int
    cost_usd: float | None  # None when its models have no prices (or it never ended)
    pending: int  # decisions it waits for
    batch: str | None  # the batch folder it belongs to
    inputs: dict[str, object] = field(default_factory=dict)
    options: dict[str, object] = field(default_factory=dict)  # run.json's `options`

    @property
    def duration_s(self) -> float | None:
        if self.started is None or self.ended is None:
            return None
        return max(0.0, self.ended - self.started)

    def to_dict(self) -> dict[str, object]:
        """The run's summary as the HTTP API sends it."""
        return {
            "id": self.id,
            "workflow": self.workflow,
            "status": self.status,
            "dry_run": self.dry_run,
            "started": self.started,
            "ended": self.ended,
            "duration_s": self.duration_s,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "cost_usd": self.cost_usd,
            "steps": self.steps,
            "pending": self.pending,
            "batch": self.batch,
        }


@dataclass(frozen=True, slots=True)
class RunList:
    """One page of runs, newest first, and how many match in all."""

    runs: list[RunEntry]
    total: int
    offset: int = 0
    limit: int | None = None

    def __iter__(self) -> Iterator[RunEntry]:
        return iter(self.runs)

    def __len__(self) -> int:
        return len(self.runs)


When = float | int | datetime | None


def list_runs(
    runs_dir: str | Path = "runs",
    *,
    workflow: str | None = None,
    status: str | Sequence[str] | None = None,
    since: When = None,
    until: When = None,
    q: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> RunList:
    """The runs under `runs_dir`, newest first, from its index (brought up to date first; made
    when missing). Filters: `workflow` (its name), `status` (one or several), `since`/`until`
    (the run's start, epoch seconds or a datetime), `q` (text in the id, workflow or inputs,
    any case); `limit` (None: all) and `offset` page through them. RunError when there is no
    such folder."""
    folder = Path(runs_dir)
    if not is_dir(folder):
        raise RunError(f"no runs folder at {folder}", "run a workflow first, or pass --runs-dir")
    if (limit is not None and limit < 0) or offset < 0:
        raise UsageError("limit and offset must not be negative", "e.g. limit=50, offset=100")
    where, params = filters(workflow, status, since, until, q)
    with _opened(folder) as conn:
        total = int(conn.execute(f"SELECT count(*) FROM runs WHERE {where}", params).fetchone()[0])
        page = f" LIMIT {-1 if limit is None else int(limit)} OFFSET {int(offset)}"
        rows = conn.execute(
            f"SELECT {SHOWN} FROM runs WHERE {where} ORDER BY sort_key DESC, id DESC{page}", params
        ).fetchall()
    return RunList([_entry(folder, row) for row in rows], total, offset, limit)


def read_run(run_dir: str | Path) -> RunEntry | None:
    """One run folder's entry, read from the folder itself (no index); None when it is not a
    run folder."""
    folder = Path(run_dir)
    row = summarize(folder, scan=True)
    if row is None or not row[1]:
        return None
    return entry_of(folder.parent, row)


def entry_of(folder: Path, row: Row) -> RunEntry:
    """The entry of a row that `summarize` made for a folder under `folder`."""
    return _entry(folder, (*row[4:21], row[0]))


def note_run(run_dir: Path) -> None:
    """Bring the run's row up to date after its run.json changed (the runs folder's index is
    made when it has none: the other folders' rows are added by the next listing). Never
    raises: the next listing catches up."""
    index = run_dir.parent / INDEX_NAME
    with contextlib.suppress(sqlite3.Error, OSError, ValueError), _NOTING:
        conn = _noting_connection(index)
        if conn is None:
            return
        row = summarize(run_dir, scan=False, owner=True)
        if row is not None:
            conn.execute(UPSERT, row)


_NOTING = threading.Lock()  # note_run is called from worker threads; one connection, one at a time
_NOTERS: dict[Path, tuple[tuple[int, int], sqlite3.Connection]] = {}
_NOTERS_CLOSED_AT_EXIT: list[object] = []  # the exit handler, once registered


def _noting_connection(index: Path) -> sqlite3.Connection | None:
    """The process's open connection to `index` (made when missing; None when the name is not a
    file). Kept open: a new
    connection's first statement reads the schema, and closing the last connection of a WAL
    database checkpoints it and removes its log, together five times the update itself. A
    file made again (a rebuild, a damaged index replaced: another inode) gets a new one."""
    try:
        found = os.stat(index)
    except FileNotFoundError:
        found = None
    kept = _NOTERS.get(index)
    identity = (found.st_dev, found.st_ino) if found is not None else None
    if kept is not None and kept[0] != identity:
        del _NOTERS[index]
        with contextlib.suppress(sqlite3.Error):
            kept[1].close()
        kept = None
    if found is None:  # no index yet: this run makes it
        with contextlib.closing(sqlite3.connect(index, timeout=NOTE_TIMEOUT_S, isolation_level=None)) as made:
            _prepare(made)
        found = os.stat(index)
    if not stat.S_ISREG(found.st_mode):
        return None
    if kept is None:
        if not _NOTERS_CLOSED_AT_EXIT:
            _NOTERS_CLOSED_AT_EXIT.append(atexit.register(_close_noting_connections))
        conn = sqlite3.connect(index, timeout=NOTE_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA synchronous=NORMAL")  # the index is made again from the folders if lost
        kept = _NOTERS[index] = ((found.st_dev, found.st_ino), conn)
    return kept[1]


def _close_noting_connections() -> None:
    with _NOTING:
        for _, conn in _NOTERS.values():
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        _NOTERS.clear()


def rebuild(runs_dir: str | Path) -> int:
    """Make the index of `runs_dir` again from its folders; how many runs it holds."""
    folder = Path(runs_dir)
    with contextlib.suppress(FileNotFoundError):
        (folder / INDEX_NAME).unlink()
    with _opened(folder) as conn:
        return int(conn.execute("SELECT count(*) FROM runs WHERE is_run = 1").fetchone()[0])


# ---------------------------------------------------------------- the index file


@contextlib.contextmanager
def _opened(folder: Path) -> Iterator[sqlite3.Connection]:
    """The folder's index, up to date: opened (made, or made again when damaged or of another
    version), or one in memory when the folder cannot hold it."""
    conn = _connect(folder)
    try:
        try:
            _refresh(conn, folder)
        except sqlite3.OperationalError:  # another process keeps it locked: list it as it is
            pass
        except sqlite3.DatabaseError:  # damaged under us: from scratch
            conn.close()
            _discard(folder)
            conn = _connect(folder)
            _refresh(conn, folder)
        yield conn
    finally:
        conn.close()


def _connect(folder: Path) -> sqlite3.Connection:
    path = folder / INDEX_NAME
    for attempt in range(2):
        conn: sqlite3.Connection | None = None
        try:
            conn = sqlite3.connect(path, timeout=LIST_TIMEOUT_S, isolation_level=None)
            _prepare(conn)
            return conn
        except sqlite3.Error:  # not a database, of another version, or a folder we cannot write
            if conn is not None:
                conn.close()
            if attempt or not _discard(folder):
                break
    conn = sqlite3.connect(":memory:", isolation_level=None)
    _prepare(conn)
    return conn


def _prepare(conn: sqlite3.Connection) -> None:
    if conn.execute("PRAGMA journal_mode").fetchone()[0] != "memory":
        conn.execute("PRAGMA journal_mode=WAL")  # readers do not wait for a run's update
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(SCHEMA)
    found = conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
    if found is None:
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (str(SCHEMA_VERSION),))
    elif found[0] != str(SCHEMA_VERSION):
        raise sqlite3.DatabaseError(f"index of version {found[0]}")


def _discard(folder: Path) -> bool:
    """Remove a damaged index (and its journal); False when the folder will not let us."""
    try:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                (folder / (INDEX_NAME + suffix)).unlink()
    except OSError:
        return False
    return True


def _refresh(conn: sqlite3.Connection, folder: Path) -> None:
    """The rows of changed, new and removed folders; running runs checked again."""
    known = {
        name: (mtime, size, recorded, status)
        for name, mtime, size, recorded, status in conn.execute(
            "SELECT name, mtime_ns, log_size, recorded, status FROM runs"
        )
    }
    seen: set[str] = set()
    stale: list[Path] = []
    statuses: list[tuple[str, str]] = []
    with os.scandir(folder) as entries:
        for entry in entries:
            try:
                if not entry.is_dir():
                    continue
                mtime = entry.stat().st_mtime_ns
            except OSError:
                continue
            seen.add(entry.name)
            row = known.get(entry.name)
            if row is None or row[0] != mtime:
                stale.append(Path(entry.path))
            elif row[2] == "running":
                changed = _running_changed(Path(entry.path), row[1], row[3])
                if changed == "read":
                    stale.append(Path(entry.path))
                elif changed:
                    statuses.append((changed, entry.name))
    gone = [(name,) for name in known if name not in seen]
    if not (stale or statuses or gone):
        return
    rows = [made for path in stale if (made := summarize(path, scan=True)) is not None]
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.executemany("DELETE FROM runs WHERE name = ?", gone)
        conn.executemany(UPSERT, rows)
        conn.executemany("UPDATE runs SET status = ? WHERE name = ?", statuses)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _running_changed(run_dir: Path, size: int, status: str) -> str | None:
    """For a row whose run was running: "read" when its log changed, the new status when only
    its owner went away (or came back), None when nothing changed."""
    try:
        now = (run_dir / "events.jsonl").stat().st_size
    except OSError:
        now = -1
    if now != size:
        return "read"
    current = current_state("running", None, owned(run_dir))
    return current if current != status else None


# ---------------------------------------------------------------- reading a run folder


def owned(run_dir: Path) -> bool:
    """Whether a live process holds the run folder's lock, told without taking it (a probe with
    flock would make a process acquiring it at that moment fail): the lock file is removed on
    release, and a killed owner leaves it naming a pid that is gone (or a zombie)."""
    try:
        text = read_whole(run_dir / LOCK_NAME).decode("ascii", "replace").strip()
    except FileNotFoundError:
        return False
    except OSError:
        return True  # there, but unreadable: assume it is held
    if not text.isdigit():
        return True  # being written by a process taking it right now
    pid = int(text)
    if pid == os.getpid():
        return True  # this process (a server following its own runs asks often)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


Row = tuple[object, ...]  # the index's columns, in COLUMNS order
Counts = tuple[int, int, int, int, float | None]  # steps, input, output, total tokens, cost


def summarize(
    run_dir: Path, *, scan: bool = True, owner: bool = False, counts: Counts | None = None
) -> Row | None:
    """The index row of a folder (None when it cannot be read). What an ended run is comes from
    run.json, usage.json and its log's first and last lines; a running one's model calls are
    `counts` when given (a fold of its whole log), else counted in its log when `scan` (the
    runtime's own update skips that: the listing does it). `owner`: the caller holds the
    folder's lock (the runtime): its state is what it recorded."""
    try:
        mtime = run_dir.stat().st_mtime_ns
    except OSError:
        return None
    meta = read_json_object(run_dir / "run.json")
    log = run_dir / "events.jsonl"
    if not meta and not log.is_file():
        return (run_dir.name, 0, mtime, -1, *([None] * (len(COLUMNS) - 4)))
    first, last, size = _ends(log)
    start = first if first.get("type") == "run_start" else {}
    ended = last.get("status") if last.get("type") == "run_end" else None
    recorded = recorded_state(_text(meta.get("status")), _text(ended))
    # running while a live process holds the folder (also one finishing, its status written)
    status = recorded if owner else current_state(recorded, None, owned(run_dir))
    if recorded != "running":
        usage = (last if ended is not None else {}).get("usage") or read_json_object(run_dir / "usage.json")
        counts = _usage_counts(usage if isinstance(usage, dict) else {})
        size = -1
    elif counts is None and scan:
        counts = _scan_calls(log)
    elif counts is None:
        counts, size = (0, 0, 0, 0, None), -1  # read again by the next listing
    started, ended_t = _time(first), _time(last)
    return _row(run_dir, meta, start, (mtime, size, status, recorded, started, ended_t), counts)


def queued_row(run_dir: Path, meta: Mapping[str, object]) -> Row:
    """The row of a folder whose run.json was just written as `meta` and that has no log yet
    (a run put in a queue): what `summarize` would read back, without reading it."""
    recorded = recorded_state(_text(meta.get("status")), None)
    state = (run_dir.stat().st_mtime_ns, -1, recorded, recorded, None, None)
    return _row(run_dir, meta, {}, state, _usage_counts({}))


def _row(
    run_dir: Path,
    meta: Mapping[str, object],
    start: Mapping[str, object],
    state: tuple[int, int, str, str, float | None, float | None],
    counts: Counts,
) -> Row:
    mtime, size, status, recorded, started, ended = state
    options = meta.get("options") or start.get("options") or {}
    options = options if isinstance(options, dict) else {}
    inputs = meta.get("inputs") or start.get("inputs") or {}
    inputs = inputs if isinstance(inputs, dict) else {}
    workflow = str(meta.get("workflow") or start.get("workflow") or "?")
    run_id = run_dir.name  # what names it under the runs folder (the API finds it by it)
    pending = meta.get("pending")
    return (
        run_dir.name,
        1,
        mtime,
        size,
        run_id,
        workflow,
        status,
        recorded,
        int(bool(options.get("dry_run", meta.get("dry_run")))),
        started,
        ended if status != "running" else None,
        started if started is not None else mtime / 1e9,
        *counts,
        len(pending) if isinstance(pending, list) and recorded == "waiting" else 0,
        _batch_of(run_dir),
        json.dumps(inputs, default=str, ensure_ascii=False),
        json.dumps(options, default=str, ensure_ascii=False),
        " ".join([run_id, workflow, _inputs_text(inputs)]).lower(),
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _entry(folder: Path, row: Row) -> RunEntry:
    """An entry from the columns of SHOWN (sqlite3 gives back the types they were stored as)."""
    (run_id, workflow, status, recorded, dry, started, ended, _sort) = row[:8]
    (steps, input_tokens, output_tokens, total_tokens, cost, pending, batch, inputs, options, name) = row[8:]
    return RunEntry(
        id=str(run_id),
        path=folder / str(name),
        workflow=str(workflow),
        status=str(status),
        recorded_status=str(recorded),
        dry_run=bool(dry),
        started=_real(started),
        ended=_real(ended),
        steps=_whole(steps),
        input_tokens=_whole(input_tokens),
        output_tokens=_whole(output_tokens),
        total_tokens=_whole(total_tokens),
        cost_usd=_real(cost),
        pending=_whole(pending),
        batch=batch if isinstance(batch, str) else None,
        inputs=_loaded(inputs),
        options=_loaded(options),
    )


def _real(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _whole(value: object) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _loaded(text: object) -> dict[str, object]:
    try:
        value = json.loads(text if isinstance(text, str) else "{}")
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _ends(log: Path) -> tuple[dict[str, object], dict[str, object], int]:
    """The log's first and last whole lines (as JSON objects; {} when unreadable) and its size,
    without reading what lies between."""
    try:
        with open_regular(log, pin=False) as f:
            head = f.readline()
            size = f.seek(0, 2)
            f.seek(max(0, size - TAIL_BYTES))
            tail = f.read()
    except OSError:
        return {}, {}, -1
    lines = tail.split(b"\n")
    lines.pop()  # b"" after the last newline, or a torn line
    first = _object(head) if head.endswith(b"\n") else {}
    return first, _object(lines[-1]) if lines else {}, size


def last_line(log: Path) -> dict[str, object]:
    """The log's last whole line as an event ({} when there is none)."""
    return _ends(log)[1]


def _object(line: bytes) -> dict[str, object]:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _time(event: Mapping[str, object]) -> float | None:
    t = event.get("t")
    return float(t) if isinstance(t, int | float) and not isinstance(t, bool) else None


def _usage_counts(usage: Mapping[str, object]) -> Counts:
    lines = usage.get("by_agent_model")
    lines = lines if isinstance(lines, list) else []
    steps = input_tokens = output_tokens = 0
    for line in lines:
        if isinstance(line, dict):
            steps += _whole(line.get("calls"))
            raw = line.get("usage")
            counts: dict[str, object] = raw if isinstance(raw, dict) else {}
            input_tokens += _whole(counts.get("input_tokens"))
            output_tokens += _whole(counts.get("output_tokens"))
    total = usage.get("total_tokens")
    cost = usage.get("total_cost_usd")
    return (
        steps,
        input_tokens,
        output_tokens,
        int(total) if isinstance(total, int) else input_tokens + output_tokens,
        float(cost) if isinstance(cost, int | float) else None,
    )


def _scan_calls(log: Path) -> Counts:
    """A running run's model calls and tokens, from its log's model_response lines."""
    steps = input_tokens = output_tokens = total = 0
    cost: float | None = None
    try:
        with open_regular(log, pin=False) as f:
            for line in f:
                if MODEL_RESPONSE not in line or not line.endswith(b"\n"):
                    continue
                event = _object(line)
                response = event.get("response")
                raw = response.get("usage") if isinstance(response, dict) else None
                if event.get("type") != "model_response" or not isinstance(raw, dict):
                    continue
                with contextlib.suppress(TypeError):
                    usage = Usage(**raw)
                    steps += 1
                    input_tokens += usage.input_tokens
                    output_tokens += usage.output_tokens
                    total += usage.total
                    if (priced := _real(event.get("cost_usd"))) is not None:
                        cost = (cost or 0.0) + priced
    except OSError:
        pass
    return steps, input_tokens, output_tokens, total, cost


def _inputs_text(inputs: Mapping[str, object]) -> str:
    return " ".join(f"{key}={value}" for key, value in inputs.items())


def _batch_of(run_dir: Path) -> str | None:
    """A batch item's run lives in BATCH/runs/ID, beside BATCH/batch.json."""
    batch = run_dir.parent.parent
    return batch.name if run_dir.parent.name == "runs" and (batch / "batch.json").is_file() else None


def filters(
    workflow: str | None,
    status: str | Sequence[str] | None,
    since: When,
    until: When,
    q: str | None,
) -> tuple[str, list[object]]:
    """The WHERE clause (with `?` parameters) of a listing over the index's columns, and its
    parameters (also the queue's runs table, queue/runs_table.py); an unknown state refused."""
    clauses, params = ["is_run = 1"], list[object]()
    if workflow:
        clauses.append("workflow = ?")
        params.append(workflow)
    if status:
        wanted = [RENAMED.get(s, s) for s in ([status] if isinstance(status, str) else list(status))]
        for name in wanted:
            if name not in NAMES:
                raise UsageError(f"no run state {name!r}", "the states: " + ", ".join(NAMES))
        clauses.append(f"status IN ({', '.join('?' * len(wanted))})")
        params += wanted
    if since is not None:
        clauses.append("sort_key >= ?")
        params.append(_epoch(since, "since"))
    if until is not None:
        clauses.append("sort_key < ?")
        params.append(_epoch(until, "until"))
    if q:
        clauses.append("search LIKE ? ESCAPE '\\'")
        escaped = q.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        params.append(f"%{escaped}%")
    return " AND ".join(clauses), params


def _epoch(value: float | int | datetime, name: str) -> float:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, bool) or not isinstance(value, int | float):
        hint = "e.g. time.time() - 86400"
        raise UsageError(f"{name} must be epoch seconds or a datetime, not {value!r}", hint)
    return float(value)
