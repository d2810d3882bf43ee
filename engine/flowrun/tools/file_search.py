"""Finding things in the workspace: list_directory, glob, grep. Walks never follow symlinked
folders, skip the names in config `ignore`, and drop what the agent's `paths` policy hides."""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flowrun.pinned import open_folder, walk
from flowrun.tools.base import ToolContext, error, tool
from flowrun.tools.file_io import Unreadable, human_size, looks_binary, open_regular, run_path_tool
from flowrun.tools.globs import glob_matches
from flowrun.tools.paths import display_path, path_allowed
from flowrun.types import ToolResult

if TYPE_CHECKING:
    import regex

DEFAULT_IGNORE = (".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache")
DEFAULT_MAX_ENTRIES = 500
DEFAULT_MAX_RESULTS = 500
DEFAULT_MAX_MATCHES = 200
DEFAULT_MAX_FILE_BYTES = 10_000_000
DEFAULT_SEARCH_S = 120.0  # grep's timeout_s, when a context has no limits
SEARCH_SHARE = 0.9  # of it for the search: its own TIMEOUT comes before the runtime's
REPEAT = re.compile(r"\{(\d+)?(?:,(\d+)?)?\}")  # a {m}, {m,}, {,n} or {m,n} count
MAX_REPEATS = 1_000_000  # the product of a pattern's counts (regex unrolls them: 0.5 s at this)
MAX_LINE_CHARS = 500


def _listing(root: Path) -> Iterator[Path]:
    """The entries of `root` (opened pinned), in name order."""
    top = open_folder(root)
    try:
        names = os.listdir(top)
    finally:
        os.close(top)
    return iter(sorted(root / name for name in names))


def _ignore(ctx: ToolContext) -> set[str]:
    return set(ctx.config.get("ignore", DEFAULT_IGNORE))


def _cap(ctx: ToolContext, key: str, default: int, asked: int | None) -> int:
    ceiling = int(ctx.config.get(key, default))
    return max(1, min(asked, ceiling)) if asked else ceiling


def _entry(ctx: ToolContext, path: Path) -> dict[str, object]:
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        kind = "symlink"
    elif stat.S_ISDIR(info.st_mode):
        kind = "dir"
    elif stat.S_ISREG(info.st_mode):
        kind = "file"
    else:
        kind = "other"
    return {"path": display_path(ctx, path), "type": kind, "size": info.st_size if kind == "file" else None}


def _entry_line(entry: dict[str, Any]) -> str:
    if entry["type"] == "dir":
        return f"{entry['path']}/"
    if entry["type"] == "file":
        return f"{entry['path']}  ({human_size(entry['size'])})"
    return f"{entry['path']}  ({entry['type']})"


@tool(files="read")
async def list_directory(
    ctx: ToolContext, *, path: str = ".", recursive: bool = False, max_entries: int | None = None
) -> ToolResult:
    params: dict[str, object] = {"path": path, "recursive": recursive, "max_entries": max_entries}
    limit = _cap(ctx, "max_entries", DEFAULT_MAX_ENTRIES, max_entries)

    def work(root: Path) -> ToolResult:
        shown = display_path(ctx, root)
        if not root.is_dir():
            if root.exists():
                return error("INVALID_PARAM", f"{shown} is a file, not a directory; use read_file to read it")
            return error("NOT_FOUND", f"{shown} does not exist")
        found = walk(root, _ignore(ctx)) if recursive else _listing(root)
        entries: list[dict[str, object]] = []
        total = 0
        for p in found:
            if not path_allowed(ctx, p):
                continue
            total += 1
            if len(entries) < limit:
                entries.append(_entry(ctx, p))
        header = f"{shown}/ ({total} entries{', recursive' if recursive else ''})"
        body = "\n".join(_entry_line(e) for e in entries) or "(empty)"
        data = {"entries": entries, "total": total, "truncated": total > limit}
        if total <= limit:
            return ToolResult(status="success", text=f"{header}:\n{body}", data=data)
        more = f"[truncated: showing {limit} of {total} entries; list a subfolder or use glob]"
        return ToolResult(status="partial", text=f"{header}:\n{body}\n{more}", data=data)

    return await run_path_tool(ctx, params, path, work, enforce_paths=False)


@tool(files="read")
async def glob(ctx: ToolContext, *, pattern: str, path: str = ".") -> ToolResult:
    params: dict[str, object] = {"pattern": pattern, "path": path}
    if not pattern or pattern.startswith("/") or ".." in pattern.split("/"):
        return error("INVALID_PARAM", "pattern must be relative to `path` and must not contain '..'")
    limit = int(ctx.config.get("max_results", DEFAULT_MAX_RESULTS))

    def work(root: Path) -> ToolResult:
        if not root.is_dir():
            return error("NOT_FOUND", f"{display_path(ctx, root)} is not a directory")
        hits = [
            p
            for p in walk(root, _ignore(ctx))
            if glob_matches(p.relative_to(root).as_posix(), pattern) and path_allowed(ctx, p)
        ]
        paths = [display_path(ctx, p) for p in hits[:limit]]
        data = {"paths": paths, "total": len(hits), "truncated": len(hits) > limit}
        if not hits:
            hint = "" if "/" in pattern else f"; `{pattern}` matches the top level only, try `**/{pattern}`"
            return ToolResult.ok(f"No paths match {pattern!r} under {display_path(ctx, root)}{hint}.", **data)
        text = f"{len(hits)} paths match {pattern!r}:\n" + "\n".join(paths)
        if len(hits) <= limit:
            return ToolResult(status="success", text=text, data=data)
        more = f"\n[truncated: showing {limit} of {len(hits)}; use a narrower pattern or path]"
        return ToolResult(status="partial", text=text + more, data=data)

    return await run_path_tool(ctx, params, path, work, enforce_paths=False)


@tool(files="read")
async def grep(
    ctx: ToolContext,
    *,
    pattern: str,
    path: str = ".",
    glob: str | None = None,
    context_lines: int = 0,
    max_matches: int | None = None,
    ignore_case: bool = False,
) -> ToolResult:
    params: dict[str, object] = {
        "pattern": pattern,
        "path": path,
        "glob": glob,
        "context_lines": context_lines,
        "max_matches": max_matches,
        "ignore_case": ignore_case,
    }
    # the `regex` module, Python's syntax: a search that can time out and that lets the event
    # loop's thread run meanwhile (`re` holds the interpreter lock for as long as a pattern that
    # backtracks, (a+)+$ on a long line, takes: minutes, and every run of the process waits)
    import regex  # (lazy: 70 ms)

    if (repeats := _repeats(pattern)) > MAX_REPEATS:
        return error(
            "INVALID_PARAM",
            f"the repeat counts of {pattern[:200]!r} multiply to {repeats}, over {MAX_REPEATS}; "
            "use smaller {m,n} counts, or + and *",
        )
    try:
        compiled = regex.compile(pattern, regex.VERSION0 | (regex.IGNORECASE if ignore_case else 0))
    except (regex.error, ValueError, OverflowError, RecursionError) as e:
        return error("INVALID_PARAM", f"invalid regular expression {pattern!r}: {e}")
    limit = _cap(ctx, "max_matches", DEFAULT_MAX_MATCHES, max_matches)
    # the search's own deadline, within the tool's timeout_s: its result says which file took long
    budget = float(ctx.limits.get("timeout_s") or DEFAULT_SEARCH_S) * SEARCH_SHARE
    search = _Search(ctx, compiled, max(0, context_lines), limit, glob, budget)
    return await run_path_tool(ctx, params, path, search.run, enforce_paths=False)


def _repeats(pattern: str) -> int:
    """The product of the pattern's `{m}`/`{m,n}` counts (the larger bound of each): what compiling
    it unrolls, as nested counts multiply (`(?:a{10000}){10000}` would take minutes and gigabytes,
    holding the event loop). Counted from the text, so an escaped brace counts too."""
    product = 1
    for low, high in REPEAT.findall(pattern):
        product *= max(_count(low), _count(high), 1)
        if product > MAX_REPEATS:
            return product
    return product


def _count(digits: str) -> int:
    return int(digits) if 0 < len(digits) <= 12 else (MAX_REPEATS + 1 if digits else 0)


class _Search:
    """One grep call: walks the files, collects matches up to the cap, within `budget` seconds."""

    def __init__(
        self,
        ctx: ToolContext,
        compiled: regex.Pattern[str],
        context: int,
        limit: int,
        glob: str | None,
        budget: float,
    ) -> None:
        self.ctx = ctx
        self.regex = compiled
        self.budget = budget
        self.deadline = 0.0  # set when the search starts
        self.slow: str | None = None  # the file being searched when the time ran out
        self.context = context
        self.limit = limit
        self.glob = glob
        self.max_file_bytes = int(ctx.config.get("max_file_bytes", DEFAULT_MAX_FILE_BYTES))
        self.matches: list[dict[str, Any]] = []
        self.lines_out: list[str] = []
        self.truncated = False
        self.searched = 0
        self.skipped = 0

    def run(self, root: Path) -> ToolResult:
        if not root.exists():
            return error("NOT_FOUND", f"{display_path(self.ctx, root)} does not exist")
        files = [root] if root.is_file() else (p for p in walk(root, _ignore(self.ctx)) if p.is_file())
        self.deadline = time.monotonic() + self.budget
        for file in files:
            if self.truncated or self.slow is not None:
                break
            if (real := self._selected(root, file)) is not None:
                self._search_file(file, real)
        if self.slow is not None:
            return error(
                "TIMEOUT",
                f"the search for {self.regex.pattern!r} took over {self.budget:g}s (in {self.slow}): "
                "a pattern that backtracks, such as (a+)+ or (x|x)*, can take that long on one line; "
                "make it simpler or search a narrower path",
            )
        return self._result(root)

    def _selected(self, root: Path, file: Path) -> Path | None:
        """The file's real path when it is to be searched."""
        if self.glob and file != root:
            rel = file.relative_to(root).as_posix()
            if not glob_matches(rel if "/" in self.glob else file.name, self.glob):
                return None
        # a symlinked file is searched only when its target is allowed too
        real = file.resolve()
        return real if path_allowed(self.ctx, file) and path_allowed(self.ctx, real) else None

    def _search_file(self, file: Path, real: Path) -> None:
        """`real` read as checked (pinned: not a file a command put there since), shown as `file`."""
        try:
            with open_regular(real, str(file)) as f:
                if os.fstat(f.fileno()).st_size > self.max_file_bytes:
                    self.skipped += 1
                    return
                data = f.read()
        except (OSError, Unreadable):
            self.skipped += 1
            return
        if looks_binary(data[:8192]):
            self.skipped += 1
            return
        self.searched += 1
        lines = data.decode("utf-8", errors="replace").splitlines()
        shown = display_path(self.ctx, file)
        last_printed = 0
        for n, line in enumerate(lines, 1):
            try:
                found = self.regex.search(
                    line, concurrent=True, timeout=max(0.001, self.deadline - time.monotonic())
                )
            except TimeoutError:
                self.slow = shown
                return
            if not found:
                continue
            if len(self.matches) >= self.limit:
                self.truncated = True
                return
            last_printed = self._add(shown, lines, n, last_printed)

    def _add(self, shown: str, lines: list[str], n: int, last_printed: int) -> int:
        lo, hi = max(1, n - self.context), min(len(lines), n + self.context)
        match: dict[str, object] = {"file": shown, "line": n, "text": lines[n - 1][:MAX_LINE_CHARS]}
        if self.context:
            match["before"] = [s[:MAX_LINE_CHARS] for s in lines[lo - 1 : n - 1]]
            match["after"] = [s[:MAX_LINE_CHARS] for s in lines[n:hi]]
            if self.lines_out and lo > last_printed + 1:
                self.lines_out.append("--")
        self.matches.append(match)
        for k in range(max(lo, last_printed + 1), hi + 1):
            sep = ":" if k == n else "-"
            self.lines_out.append(f"{shown}{sep}{k}{sep}{lines[k - 1][:MAX_LINE_CHARS]}")
        return hi

    def _result(self, root: Path) -> ToolResult:
        data = {
            "matches": self.matches,
            "truncated": self.truncated,
            "files_searched": self.searched,
            "files_skipped": self.skipped,
        }
        skipped = f" ({self.skipped} binary or oversized files skipped)" if self.skipped else ""
        if not self.matches:
            where = display_path(self.ctx, root)
            return ToolResult.ok(f"No matches for {self.regex.pattern!r} in {where}{skipped}.", **data)
        count = len(self.matches)
        text = f"{count} matches in {self.searched} files searched{skipped}:\n" + "\n".join(self.lines_out)
        if not self.truncated:
            return ToolResult(status="success", text=text, data=data)
        more = f"\n[truncated: stopped after {self.limit} matches; narrow the pattern, path or glob]"
        return ToolResult(status="partial", text=text + more, data=data)
