"""File tools: read_file, write_file, delete_file, create_directory.

edit_file lives in file_edit.py, list_directory / glob / grep in file_search.py and the
streaming reader in file_stream.py. Every path goes through `paths.resolve_path`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from flowrun.pinned import open_folder
from flowrun.tools.base import ToolContext, error, tool
from flowrun.tools.file_io import (
    atomic_write,
    atomic_write_on_loop,
    check_text,
    encode_text,
    encoding_problem,
    file_update,
    human_size,
    is_utf8,
    iter_lines,
    numbered,
    open_regular,
    plural,
    read_regular,
    read_text,
    run_path_tool,
    run_small_write,
)
from flowrun.tools.paths import display_path
from flowrun.types import ToolResult

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 100_000
DEFAULT_MAX_WRITE_BYTES = 10_000_000
WRITE_MODES = ("create", "overwrite", "append")


@tool(files="read")
async def read_file(
    ctx: ToolContext,
    *,
    path: str,
    start_line: int | None = None,
    end_line: int | None = None,
    encoding: str = "utf-8",
) -> ToolResult:
    params: dict[str, object] = {"path": path, "start_line": start_line, "end_line": end_line}
    if not is_utf8_name(encoding):
        params["encoding"] = encoding
    max_lines = int(ctx.config.get("max_lines", DEFAULT_MAX_LINES))
    max_bytes = int(ctx.config.get("max_bytes", DEFAULT_MAX_BYTES))
    start = start_line or 1
    if start < 1 or (end_line is not None and end_line < start):
        return error("INVALID_PARAM", f"need 1 <= start_line <= end_line (got {start_line}, {end_line})")
    if problem := encoding_problem(encoding):
        return error("INVALID_PARAM", problem)

    def work(resolved: Path) -> ToolResult:
        shown = display_path(ctx, resolved)
        if not is_utf8(encoding) and not resolved.is_dir():
            return _read_decoded(resolved, shown, start, end_line, max_lines, max_bytes, encoding)
        return _read_range(resolved, shown, start, end_line, max_lines, max_bytes)

    return await run_path_tool(ctx, params, path, work)


def is_utf8_name(encoding: str) -> bool:
    return encoding_problem(encoding) is None and is_utf8(encoding)


def _read_decoded(
    resolved: Path, shown: str, start: int, end: int | None, max_lines: int, max_bytes: int, encoding: str
) -> ToolResult:
    """read_file in another encoding than UTF-8: the file decoded whole (within 10 x max_bytes),
    then the same line window and caps as for UTF-8."""
    size = resolved.stat().st_size
    if size > max_bytes * 10:
        return error(
            "INVALID_PARAM",
            f"{shown} is {human_size(size)}; files in {encoding} are read whole up to {max_bytes * 10} bytes",
        )
    text = read_text(resolved, shown, encoding)
    raw = iter((line.encode("utf-8"), False) for line in text.splitlines())
    return _window(
        shown, start, _collect(raw, start, end, max_lines, max_bytes), max_lines, max_bytes, encoding
    )


def _read_range(
    resolved: Path, shown: str, start: int, end: int | None, max_lines: int, max_bytes: int
) -> ToolResult:
    if resolved.is_dir():
        return error("IS_DIRECTORY", f"{shown} is a directory; use list_directory to see what it holds")
    with open_regular(resolved, shown) as f:
        check_text(f, shown, os.fstat(f.fileno()).st_size)
        collected = _collect(iter_lines(f, max_bytes + 1), start, end, max_lines, max_bytes)
    return _window(shown, start, collected, max_lines, max_bytes)


def _window(
    shown: str,
    start: int,
    collected: tuple[list[str], int, int | None, int | None],
    max_lines: int,
    max_bytes: int,
    encoding: str | None = None,
) -> ToolResult:
    """read_file's answer: the lines `_collect` picked, numbered, and how to read on when they
    were capped; `encoding` said when it is not UTF-8."""
    lines, total, next_start, long_line = collected
    if total == 0:
        return ToolResult.ok(
            f"{shown} is empty.", content="", start_line=0, end_line=0, total_lines=0, truncated=False
        )
    if start > total:
        return error("INVALID_PARAM", f"start_line {start} is past the end of {shown} ({total} lines)")
    last = start + len(lines) - 1
    data: dict[str, object] = {
        "content": "\n".join(lines),
        "start_line": start,
        "end_line": last,
        "total_lines": total,
        "truncated": next_start is not None or long_line is not None,
        "next_start_line": next_start,
    }
    if encoding is not None:
        data["encoding"] = encoding
    said = f"{encoding}, " if encoding else ""
    text = f"{shown} ({said}lines {start}-{last} of {total}):\n{numbered(lines, start)}"
    if not data["truncated"]:
        return ToolResult(status="success", text=text, data=data)
    notes = []
    if long_line is not None:
        notes.append(f"line {long_line} is longer than max_bytes={max_bytes} and was cut")
    if next_start is not None:
        notes.append(
            f"output stopped at line {last} (limits: max_lines={max_lines}, max_bytes={max_bytes}); "
            f"call read_file with start_line={next_start} to continue"
        )
    return ToolResult(status="partial", text=text + "\n[truncated: " + "; ".join(notes) + "]", data=data)


def _collect(
    lines_iter: Iterator[tuple[bytes, bool]], start: int, end: int | None, max_lines: int, max_bytes: int
) -> tuple[list[str], int, int | None, int | None]:
    """Pick lines start..end within the caps; count the rest. Returns (lines, total lines,
    next line to ask for when capped, the number of a line cut for length)."""
    out: list[str] = []
    used = 0
    lineno = 0
    next_start: int | None = None
    long_line: int | None = None
    for raw, cut in lines_iter:
        lineno += 1
        if lineno < start or (end is not None and lineno > end) or next_start is not None:
            continue
        if len(out) >= max_lines or (out and used + len(raw) > max_bytes):
            next_start = lineno
            continue
        if cut or len(raw) > max_bytes:
            raw = raw[:max_bytes]
            long_line = lineno
        out.append(raw.decode("utf-8", errors="replace"))
        used += len(raw) + 1
    return out, lineno, next_start, long_line


def _write_repeat_safe(arguments: Mapping[str, object]) -> bool:
    """create and overwrite leave the same file when run twice; append adds the text twice."""
    return bool(arguments.get("mode", "create") != "append")


@tool(files="write", idempotent=_write_repeat_safe)
async def write_file(
    ctx: ToolContext, *, path: str, content: str, mode: str = "create", encoding: str = "utf-8"
) -> ToolResult:
    params: dict[str, object] = {"path": path, "content": f"<{len(content)} chars>", "mode": mode}
    if not is_utf8_name(encoding):
        params["encoding"] = encoding
    if mode not in WRITE_MODES:
        return error("INVALID_PARAM", f"mode must be one of {', '.join(WRITE_MODES)} (got {mode!r})")
    if problem := encoding_problem(encoding):
        return error("INVALID_PARAM", problem)
    encoded = encode_text(content, encoding, path)
    if isinstance(encoded, ToolResult):
        return encoded
    data = encoded
    limit = int(ctx.config.get("max_bytes", DEFAULT_MAX_WRITE_BYTES))
    if len(data) > limit:
        return error("INVALID_PARAM", f"content is {len(data)} bytes, over this agent's max_bytes={limit}")

    if mode != "append":  # one file of a bounded size: on the loop, its fsync in a thread

        async def replace(resolved: Path) -> ToolResult:
            return await _replace(resolved, display_path(ctx, resolved), data, mode)

        return await run_small_write(ctx, params, path, replace)

    def work(resolved: Path) -> ToolResult:
        with file_update(resolved):
            return _append(resolved, display_path(ctx, resolved), data, encoding, content, limit)

    return await run_path_tool(ctx, params, path, work, write=True)


def _before_write(resolved: Path, shown: str, mode: str) -> tuple[ToolResult | None, bool]:
    """(the refusal, or None; whether the file exists)."""
    if resolved.is_dir():
        return error("IS_DIRECTORY", f"{shown} is a directory; give a file path"), True
    existed = resolved.exists()
    if existed and mode == "create":
        return error(
            "ALREADY_EXISTS",
            f"{shown} already exists ({human_size(resolved.stat().st_size)}); use mode=overwrite to "
            "replace it, mode=append to add to its end, or edit_file for a targeted change",
        ), True
    return None, existed  # (the write makes the folders it needs, file_io.atomic_write)


async def _replace(resolved: Path, shown: str, data: bytes, mode: str) -> ToolResult:
    refused, existed = _before_write(resolved, shown, mode)
    if refused is not None:
        return refused
    try:
        await atomic_write_on_loop(resolved, data, exclusive=mode == "create")
    except FileExistsError:
        return error("ALREADY_EXISTS", f"{shown} was created by someone else meanwhile; use mode=overwrite")
    return _written(resolved, shown, data, mode, existed)


def _append(resolved: Path, shown: str, data: bytes, encoding: str, content: str, limit: int) -> ToolResult:
    """Append by writing the file anew (atomic, as every write): the file as it is, then the text,
    the whole at most `limit` bytes (max_bytes)."""
    refused, existed = _before_write(resolved, shown, "append")
    if refused is not None:
        return refused
    size = resolved.stat().st_size if existed else 0
    if size + len(data) > limit:
        return error(
            "INVALID_PARAM",
            f"{shown} is {human_size(size)}; with {len(data)} bytes more it would be over this tool's "
            f"max_bytes={limit} (an append writes the file anew)",
        )
    room = limit - len(data)  # (the file read is held to it, should it grow meanwhile)
    if existed and not is_utf8(encoding):
        # decode and encode the whole text, so a byte-order mark is not repeated mid-file
        joined = encode_text(read_text(resolved, shown, encoding, room) + content, encoding, shown)
        if isinstance(joined, ToolResult):
            return joined
        atomic_write(resolved, joined)
    else:
        atomic_write(resolved, (read_regular(resolved, shown, room) if existed else b"") + data)
    return _written(resolved, shown, data, "append", existed)


def _written(resolved: Path, shown: str, data: bytes, mode: str, existed: bool) -> ToolResult:
    size = resolved.stat().st_size
    verb = "Created" if not existed else ("Overwrote" if mode == "overwrite" else "Appended to")
    lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    size_now = human_size(size)
    text = f"{verb} {shown}: wrote {len(data)} bytes ({plural(lines, 'line')}); the file is now {size_now}."
    return ToolResult.ok(
        text,
        applied=True,
        operation=mode,
        path=shown,
        created=not existed,
        bytes_written=len(data),
        size=size,
    )


@tool(files="change")
async def delete_file(ctx: ToolContext, *, path: str) -> ToolResult:
    """Delete a file, a symlink (the link, never its target) or an empty folder."""
    params: dict[str, object] = {"path": path}

    def work(resolved: Path) -> ToolResult:
        return _delete(ctx, resolved)

    return await run_path_tool(ctx, params, path, work, write=True, follow_symlinks=False)


def _delete(ctx: ToolContext, resolved: Path) -> ToolResult:
    """By name in its folder, opened pinned to the checked path (flowrun/pinned.py): a folder on
    the way swapped for a symlink meanwhile removes nothing."""
    shown = display_path(ctx, resolved)
    if resolved == ctx.base_dir.resolve():
        return error("ACCESS_DENIED", "refusing to delete the workspace root")
    folder = open_folder(resolved.parent)
    try:
        return _delete_in(folder, resolved.name, shown)
    finally:
        os.close(folder)


def _delete_in(folder: int, name: str, shown: str) -> ToolResult:
    info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    if stat.S_ISLNK(info.st_mode):
        os.unlink(name, dir_fd=folder)
        return ToolResult.ok(
            f"Deleted the symlink {shown} (its target was not touched).", applied=True, path=shown
        )
    if stat.S_ISDIR(info.st_mode):
        inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
        try:
            entries = len(os.listdir(inner))
        finally:
            os.close(inner)
        if entries:
            return error(
                "INVALID_PARAM",
                f"{shown} is a directory with {entries} entries; delete_file removes files and empty "
                "directories only, so delete its contents first",
            )
        os.rmdir(name, dir_fd=folder)
        return ToolResult.ok(f"Deleted the empty directory {shown}.", applied=True, path=shown, type="dir")
    os.unlink(name, dir_fd=folder)
    return ToolResult.ok(
        f"Deleted {shown} ({human_size(info.st_size)}).", applied=True, path=shown, type="file"
    )


@tool(files="change")
async def create_directory(ctx: ToolContext, *, path: str) -> ToolResult:
    params: dict[str, object] = {"path": path}

    def work(resolved: Path) -> ToolResult:
        shown = display_path(ctx, resolved)
        if resolved.is_dir():
            return ToolResult.ok(f"{shown} already exists.", applied=False, path=shown, created=False)
        if resolved.exists():
            return error("ALREADY_EXISTS", f"{shown} exists and is a file, not a directory")
        os.close(open_folder(resolved, make=True))  # each folder made by name in its pinned parent
        return ToolResult.ok(f"Created the directory {shown}.", applied=True, path=shown, created=True)

    return await run_path_tool(ctx, params, path, work, write=True)
