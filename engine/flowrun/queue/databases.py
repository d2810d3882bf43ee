"""The two databases a queue can live in, behind one small interface: SQLite in the runs folder
(`.queue.sqlite`: the embedded backend, for one machine) and Postgres (a `postgresql://` URL:
for several machines). The queue's SQL is written once (queue/store.py) with `?` parameters and
`{now}` for the database's clock; each database says how it runs it. Connections are kept one
per thread (the worker's loop hands its queries to threads, its heartbeat has its own)."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Union

from flowrun.errors import UsageError

QUEUE_FILE = ".queue.sqlite"  # the embedded queue, in the runs folder
CHANNEL = "flowrun_queue"  # Postgres: NOTIFY on it when a job is queued or a cancel asked
SQLITE_POLL_S = 0.02  # the embedded queue has no notifications: its workers look this often
POSTGRES_POLL_S = 1.0  # a notification missed (a reconnect) is found this late at worst
Value = str | int | float | None  # what a column holds (TEXT, INTEGER, DOUBLE PRECISION, NULL)
Rows = list[tuple[Value, ...]]

if TYPE_CHECKING:
    import psycopg

DriverCursor = Union["sqlite3.Cursor", "psycopg.Cursor[tuple[Value, ...]]"]


class Cursor(Protocol):
    """What a transaction runs its statements on."""

    def run(self, sql: str, params: Sequence[object] = ()) -> Rows: ...

    def count(self, sql: str, params: Sequence[object] = ()) -> int: ...


class Database(Protocol):
    """A queue's database: statements in transactions, and a wait for news."""

    url: str
    now: str  # SQL for the database's clock, in epoch seconds (one clock for every machine)
    skip_locked: str  # what a claim's SELECT ends with to pass rows another claim holds
    poll_s: float

    def transaction(self, write: bool = True) -> contextlib.AbstractContextManager[Cursor]: ...

    def notify(self, cursor: Cursor) -> None: ...

    def wait(self, timeout: float) -> None: ...

    def close(self) -> None: ...


class _Statements:
    """A cursor over either driver, with the queue's SQL made the driver's."""

    def __init__(self, cursor: DriverCursor, now: str, marker: str) -> None:
        self.cursor = cursor
        self.now = now
        self.marker = marker

    def _sql(self, sql: str) -> str:
        """The statement in the driver's words: every one is the queue's own text (tables.py,
        store.py), its values always parameters, never spliced in (so psycopg's wish for a
        literal string is met in substance)."""
        sql = sql.replace("{now}", self.now)
        return sql.replace("?", self.marker) if self.marker != "?" else sql

    def run(self, sql: str, params: Sequence[object] = ()) -> Rows:
        self.cursor.execute(self._sql(sql), _values(params))  # pyright: ignore[reportArgumentType]
        return list(self.cursor.fetchall()) if self.cursor.description is not None else []

    def count(self, sql: str, params: Sequence[object] = ()) -> int:
        self.cursor.execute(self._sql(sql), _values(params))  # pyright: ignore[reportArgumentType]
        return int(self.cursor.rowcount)


def whole(value: Value) -> int:
    """A column read as an integer (NULL: 0)."""
    return int(value) if value is not None else 0


def real(value: Value) -> float:
    """A column read as a number (NULL: 0.0)."""
    return float(value) if value is not None else 0.0


def _values(params: Sequence[object]) -> tuple[Value, ...]:
    """The statement's parameters as the drivers take them (JSON and the like: text)."""
    return tuple(p if p is None or isinstance(p, str | int | float) else str(p) for p in params)


class SqliteDatabase:
    """The embedded queue: one SQLite file in WAL mode; a write transaction takes the file's
    write lock at its start (BEGIN IMMEDIATE), so claims never interleave."""

    now = "((julianday('now') - 2440587.5) * 86400.0)"
    skip_locked = ""
    poll_s = SQLITE_POLL_S

    def __init__(self, path: Path) -> None:
        self.path = path
        self.url = str(path)
        self._local = threading.local()
        # this process's writers, one at a time: a thread waiting on SQLite's own lock polls it
        # with growing sleeps (1 ms, 2, 5, ... 100), a waiter on this one wakes as it is let go
        self._writing = threading.Lock()

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # a power cut may lose the last jobs' news,
            # not the runs: their folders are the record
            self._local.conn = conn
        return conn

    @contextlib.contextmanager
    def transaction(self, write: bool = True) -> Iterator[Cursor]:
        """`write`: the file's write lock from the start (a read waits for no writer)."""
        conn = self._connection()
        with self._writing if write else contextlib.nullcontext():
            cursor = conn.cursor()
            cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield _Statements(cursor, self.now, "?")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def notify(self, cursor: Cursor) -> None:
        """Nothing to send: the workers look every SQLITE_POLL_S."""

    def wait(self, timeout: float) -> None:
        time.sleep(min(timeout, self.poll_s))

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


class PostgresDatabase:
    """The shared queue: Postgres through psycopg 3, each statement group a transaction; claims
    pass the rows another claim holds (FOR UPDATE SKIP LOCKED), and news is a NOTIFY."""

    now = "extract(epoch from clock_timestamp())::float8"
    skip_locked = " FOR UPDATE SKIP LOCKED"
    poll_s = POSTGRES_POLL_S

    def __init__(self, url: str) -> None:
        self.url = url
        self._local = threading.local()
        self._listener: psycopg.Connection[tuple[Value, ...]] | None = None
        self._listening = threading.Lock()

    def _connection(self) -> psycopg.Connection[tuple[Value, ...]]:
        import psycopg

        conn: psycopg.Connection[tuple[Value, ...]] | None = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            conn = self._local.conn = psycopg.connect(self.url, autocommit=True)
        return conn

    @contextlib.contextmanager
    def transaction(self, write: bool = True) -> Iterator[Cursor]:
        import psycopg

        conn = self._connection()
        try:
            with conn.transaction(), conn.cursor() as cursor:
                yield _Statements(cursor, self.now, "%s")
        except psycopg.OperationalError:
            conn.close()  # a lost connection: the next transaction makes a new one
            raise

    def notify(self, cursor: Cursor) -> None:
        cursor.run(f"NOTIFY {CHANNEL}")

    def wait(self, timeout: float) -> None:
        """Until a NOTIFY on the channel, or `timeout` (at most POSTGRES_POLL_S)."""
        import psycopg

        with self._listening:  # one listening connection, one waiter at a time
            try:
                if self._listener is None or self._listener.closed:
                    self._listener = psycopg.connect(self.url, autocommit=True)
                    self._listener.execute(f"LISTEN {CHANNEL}")
                for _ in self._listener.notifies(timeout=min(timeout, self.poll_s), stop_after=1):
                    break
            except psycopg.OperationalError:
                self._listener = None
                time.sleep(min(timeout, self.poll_s))

    def close(self) -> None:
        for conn in (getattr(self._local, "conn", None), self._listener):
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()


def open_database(queue: str | None, runs_dir: Path) -> Database:
    """The database `--queue` names: a `postgresql://` (or `postgres://`) URL, else the embedded
    queue of the runs folder (`queue` None or `embedded`)."""
    if queue is None or queue == "embedded":
        runs_dir.mkdir(parents=True, exist_ok=True)
        return SqliteDatabase(runs_dir / QUEUE_FILE)
    if queue.startswith(("postgresql://", "postgres://")):
        import importlib.util

        if importlib.util.find_spec("psycopg") is None:
            raise UsageError("a Postgres queue needs psycopg", "pip install 'flowrun[queue]'")
        return PostgresDatabase(queue)
    raise UsageError(f"--queue {queue!r} is not a queue", "give postgresql://USER@HOST/DB, or embedded")


def shown(queue: str | None) -> str:
    """The queue as a record or a message says it: `embedded`, or its URL without its password."""
    if queue is None or queue == "embedded":
        return "embedded"
    from urllib.parse import urlsplit

    parts = urlsplit(queue)
    if parts.password is None:
        return queue
    host = parts.netloc.rsplit("@", 1)[1]
    return parts._replace(netloc=f"{parts.username}@{host}").geturl()
