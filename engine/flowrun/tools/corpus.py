"""The offline search backend: a SQLite FTS5 index over a folder of text, markdown and html files.

`web_search` falls back to it when no Tavily key is set, so a workflow runs (and is tested) with
no network. The index is built once per corpus state: its file name is a hash of the corpus'
paths, sizes and mtimes, so editing a document makes a new index and an unchanged corpus reuses
the old one. It is built into a temp file and renamed into place, so concurrent searches never
see half an index.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from flowrun.paths import builtin_corpus
from flowrun.tools.base import ToolContext

TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".rst"}
HTML_SUFFIXES = {".html", ".htm"}
# the corpus' own description is not a document to find
SKIPPED_NAMES = {"readme.md", "readme.txt", "readme", "license", "license.md", "license.txt"}
INDEX_VERSION = "1"  # bump when the table layout changes, so old caches are not reused
MAX_DOC_BYTES = 5_000_000
TERM = re.compile(r"\w+", re.UNICODE)
PHRASE = re.compile(r'"([^"]+)"')
# dropped from natural-language queries: they match every document and drown the ranking
STOPWORDS = frozenset(
    "a an and are as at be by can do does for from how i in is it of on or that the this to what when "
    "where which who why with you your".split()
)


@dataclass(slots=True)
class Hit:
    title: str
    path: Path
    snippet: str
    score: float


def find_corpus_dir(ctx: ToolContext) -> Path | None:
    """Config `corpus_dir` (relative paths start at the project folder, the first search-path
    entry), else the first `corpus/` folder on the search path, else the corpus shipped with
    flowrun (so a copy of an example works from any folder)."""
    configured = ctx.config.get("corpus_dir")
    if configured:
        path = Path(str(configured)).expanduser()
        if not path.is_absolute():
            base = ctx.search_path[0] if ctx.search_path else ctx.cwd
            path = base / path
        return path.resolve() if path.is_dir() else None
    for entry in ctx.search_path:
        candidate = entry / "corpus"
        if candidate.is_dir():
            return candidate.resolve()
    shipped = builtin_corpus()
    return shipped.resolve() if shipped is not None else None


def corpus_files(corpus: Path) -> list[Path]:
    """The documents of a corpus: text/markdown/html files, hidden folders and the top-level
    README/LICENSE left out, sorted for a stable index."""
    out: list[Path] = []
    for root, dirs, files in os.walk(corpus):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = Path(root) / name
            if name.startswith(".") or path.suffix.lower() not in TEXT_SUFFIXES | HTML_SUFFIXES:
                continue
            if Path(root) == corpus and name.lower() in SKIPPED_NAMES:
                continue
            out.append(path)
    return out


def cache_key(corpus: Path, files: list[Path]) -> str:
    digest = hashlib.sha256(f"{INDEX_VERSION}\0{corpus}".encode())
    for path in files:
        st = path.stat()
        digest.update(f"\0{path.relative_to(corpus)}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    return digest.hexdigest()[:20]


def default_cache_dir() -> Path:
    return Path(tempfile.gettempdir()) / "flowrun-corpus-cache"


def ensure_index(corpus: Path, cache_dir: Path | None = None) -> tuple[Path, int]:
    """The index file for the corpus' current state (built if missing) and its document count."""
    files = corpus_files(corpus)
    cache_dir = cache_dir or default_cache_dir()
    index = cache_dir / f"corpus-{cache_key(corpus, files)}.sqlite"
    if not index.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        _build_index(corpus, files, index)
    return index, len(files)


def _build_index(corpus: Path, files: list[Path], index: Path) -> None:
    fd, tmp_name = tempfile.mkstemp(prefix=index.stem + ".", suffix=".tmp", dir=index.parent)
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp_name)
        try:
            conn.execute(
                "CREATE VIRTUAL TABLE docs USING fts5(title, body, path UNINDEXED, "
                "tokenize = 'porter unicode61 remove_diacritics 2')"
            )
            conn.executemany(
                "INSERT INTO docs (title, body, path) VALUES (?, ?, ?)", _documents(corpus, files)
            )
            conn.commit()
        finally:
            conn.close()
        os.replace(tmp_name, index)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def _documents(corpus: Path, files: list[Path]) -> Iterator[tuple[str, str, str]]:
    for path in files:
        title, body = read_document(path)
        yield title, body, path.relative_to(corpus).as_posix()


def read_document(path: Path) -> tuple[str, str]:
    """(title, plain text) of one corpus file; html is stripped to text."""
    raw = path.read_bytes()[:MAX_DOC_BYTES].decode("utf-8", errors="replace")
    if path.suffix.lower() in HTML_SUFFIXES:
        title, body = html_to_text(raw)
    else:
        title, body = _markdown_title(raw), raw
    return title or path.stem.replace("-", " ").replace("_", " "), body


def _markdown_title(text: str) -> str:
    """The first `# heading`, or an rst-style title (a line underlined with = or #)."""
    lines = text.splitlines()[:40]
    for i, line in enumerate(lines):
        if line.startswith("# "):
            return line[2:].strip()
        if i + 1 < len(lines) and line.strip() and re.fullmatch(r"[=#]{3,}", lines[i + 1].strip()):
            return line.strip()
    return ""


class _TextExtractor(HTMLParser):
    """html → text with line breaks at block elements; script/style/nav content dropped."""

    SKIP = frozenset({"script", "style", "noscript", "nav", "svg", "template"})
    BLOCK = frozenset(
        {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "section", "dt", "dd"}
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip_depth = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIP:
            self._skip_depth += 1
        elif tag == "title":
            self._in_title = True
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP and self._skip_depth:
            self._skip_depth -= 1
        elif tag == "title":
            self._in_title = False
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip_depth:
            self.parts.append(data)


def html_to_text(html: str) -> tuple[str, str]:
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    text = re.sub(r"[ \t\r\f\v]+", " ", "".join(parser.parts))
    text = re.sub(r"\s*\n\s*", "\n", text).strip()
    return " ".join(parser.title.split()), text


def fts_query(query: str) -> str:
    """A safe FTS5 MATCH expression from free text. Each `"quoted phrase"` and each other
    whitespace-separated word becomes one double-quoted FTS5 string (so `0.1` or `os.path`
    match as adjacent tokens), OR-ed together: bm25 ranks documents matching more of them
    first. Inside a quoted string FTS5 operators (AND, NEAR, *, :, parentheses) are inert,
    and a `"` is escaped by doubling it."""
    chunks = [p.strip() for p in PHRASE.findall(query)]
    words = PHRASE.sub(" ", query).replace('"', " ").split()
    content = [w for w in words if w.lower().strip(".,;:!?()[]{}'") not in STOPWORDS] or words
    seen: set[str] = set()
    terms: list[str] = []
    for chunk in chunks + content:
        key = " ".join(TERM.findall(chunk.lower()))
        if key and key not in seen:
            seen.add(key)
            terms.append('"' + chunk.replace('"', '""') + '"')
    return " OR ".join(terms)


def search_index(index: Path, query: str, limit: int) -> list[dict[str, Any]]:
    """Ranked matches as dicts: title, path (corpus-relative), snippet, score (higher is better)."""
    match = fts_query(query)
    if not match:
        return []
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT title, path, snippet(docs, 1, '**', '**', ' … ', 32), bm25(docs, 4.0, 1.0) AS rank "
            "FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT ?",
            (match, limit),
        ).fetchall()
    finally:
        conn.close()
    return [
        {"title": title, "path": path, "snippet": " ".join(snippet.split()), "score": float(f"{-rank:.4g}")}
        for title, path, snippet, rank in rows
    ]


def search_corpus(
    corpus: Path, query: str, limit: int, cache_dir: Path | None = None
) -> tuple[list[Hit], int]:
    """Search a corpus folder (building its index if needed). Returns the hits and the number
    of documents indexed. Blocking: callers in async code run it in a thread."""
    index, count = ensure_index(corpus, cache_dir)
    hits = [
        Hit(row["title"], corpus / row["path"], row["snippet"], row["score"])
        for row in search_index(index, query, limit)
    ]
    return hits, count
