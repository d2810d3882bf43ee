"""`search` over a memory: SQLite FTS5, ranked by bm25, a passage matching any of the query's
terms (stemmed: `writes` finds `write`). The index is a cache of the files, one per memory folder
in flowrun's cache folder (by the folder's real path; in memory when there is none), brought up
to date before each search: a file whose size or modification time changed is read again, one
gone is dropped. So an edit by hand, by Claude Code or by another run is always found, and
deleting the cache loses nothing. Files are indexed by passage (lines between blank lines, at
most PASSAGE_LINES), so a hit names its line."""

from __future__ import annotations

import hashlib
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from flowrun.paths import cache_base
from flowrun.tools.memory.folder import Entry, MemoryFolder, Refused

PASSAGE_LINES = 20
MAX_TERMS = 32
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS files(path TEXT PRIMARY KEY, size INTEGER, mtime INTEGER)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS passages USING fts5(path UNINDEXED, line UNINDEXED, text, "
    "tokenize='porter unicode61 remove_diacritics 2')",
)


@dataclass(frozen=True, slots=True)
class Hit:
    path: str  # as the memory tool names it (/memories/...)
    line: int
    snippet: str
    score: float  # bm25: lower is better


def search(folder: MemoryFolder, query: str, limit: int = 10) -> list[Hit]:
    """The passages of the memory that best match any term of `query`; Refused for a query
    without a word."""
    terms = re.findall(r"\w+", query)[:MAX_TERMS]
    if not terms:
        raise Refused("INVALID_PARAM", "search needs a `query` with at least one word")
    match = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
    db = _index(folder)
    try:
        rows = db.execute(
            "SELECT path, line, snippet(passages, 2, '[', ']', '…', 16), bm25(passages) FROM passages "
            "WHERE passages MATCH ? ORDER BY bm25(passages) LIMIT ?",
            (match, limit),
        ).fetchall()
    finally:
        db.close()
    return [
        Hit(folder.virtual(path), int(line), " ".join(str(text).split()), float(score))
        for path, line, text, score in rows
    ]


def _index(folder: MemoryFolder) -> sqlite3.Connection:
    """The folder's index, up to date with its files (a damaged cache file is made again)."""
    path = index_path(folder)
    try:
        return _synced(folder, str(path) if path else ":memory:")
    except sqlite3.DatabaseError:
        if path is None:
            raise
        path.unlink(missing_ok=True)
        return _synced(folder, str(path))


def _synced(folder: MemoryFolder, where: str) -> sqlite3.Connection:
    db = sqlite3.connect(where, timeout=30)
    try:
        for statement in SCHEMA:
            db.execute(statement)
        _sync(folder, db)
        db.commit()
    except BaseException:
        db.close()
        raise
    return db


def index_path(folder: MemoryFolder) -> Path | None:
    """The cache file of the folder's index; None: keep it in memory (no cache folder)."""
    base = cache_base()
    if base is None:
        return None
    where = base / "memory-index"
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    key = hashlib.sha256(str(folder.real_root()).encode()).hexdigest()[:32]
    return where / f"{key}.sqlite"


def _sync(folder: MemoryFolder, db: sqlite3.Connection) -> None:
    files = {e.rel: e for e in folder.files()}
    known = {row[0]: (row[1], row[2]) for row in db.execute("SELECT path, size, mtime FROM files")}
    for rel in set(known) - set(files):
        _drop(db, rel)
    for rel, entry in files.items():
        if known.get(rel) != (entry.size, entry.mtime_ns):
            _drop(db, rel)
            _add(folder, db, entry)


def _drop(db: sqlite3.Connection, rel: str) -> None:
    db.execute("DELETE FROM passages WHERE path = ?", (rel,))
    db.execute("DELETE FROM files WHERE path = ?", (rel,))


def _add(folder: MemoryFolder, db: sqlite3.Connection, entry: Entry) -> None:
    try:
        text = folder.read_text(entry.rel, limit=max(folder.caps.max_file_bytes, entry.size))
    except Refused:
        text = ""  # not text, or gone meanwhile: nothing to find in it
    db.executemany(
        "INSERT INTO passages(path, line, text) VALUES (?, ?, ?)",
        [(entry.rel, line, body) for line, body in passages(text)],
    )
    db.execute(
        "INSERT INTO files(path, size, mtime) VALUES (?, ?, ?)", (entry.rel, entry.size, entry.mtime_ns)
    )


def passages(text: str) -> list[tuple[int, str]]:
    """(first line, text) of each passage: lines between blank lines, at most PASSAGE_LINES."""
    out: list[tuple[int, str]] = []
    start, held = 0, list[str]()
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip() or len(held) >= PASSAGE_LINES:
            if held:
                out.append((start, "\n".join(held)))
            held = [line] if line.strip() else []
            start = number
            continue
        if not held:
            start = number
        held.append(line)
    if held:
        out.append((start, "\n".join(held)))
    return out
