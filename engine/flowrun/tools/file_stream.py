"""Reading a large file in chunks: stream_read_file returns the first chunk and a stream_id,
continue_stream_read returns the next one until the file is done. Cursors (byte offset, line
number, file size and mtime to notice changes) live in the run's `FileStreams` (ctx.state)."""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

from flowrun.tools.base import ToolContext, error, finish_result, tool
from flowrun.tools.file_io import Unreadable, check_text, numbered, open_regular, run_path_tool
from flowrun.tools.paths import display_path
from flowrun.types import ToolResult

DEFAULT_MAX_CHUNK_LINES = 2000
DEFAULT_MAX_BYTES = 100_000


@dataclass(slots=True)
class StreamCursor:
    path: Path
    shown: str
    offset: int  # byte offset of the next line
    next_line: int
    chunk_lines: int
    max_bytes: int
    size: int
    mtime_ns: int


@dataclass
class FileStreams:
    """A run's open streams by stream_id (`ctx.state.of(FileStreams)`)."""

    cursors: dict[str, StreamCursor] = field(default_factory=dict)


@tool(files="read")
async def stream_read_file(ctx: ToolContext, *, path: str, chunk_lines: int = 1000) -> ToolResult:
    params: dict[str, object] = {"path": path, "chunk_lines": chunk_lines}
    lines = max(1, min(chunk_lines, int(ctx.config.get("max_chunk_lines", DEFAULT_MAX_CHUNK_LINES))))
    max_bytes = int(ctx.config.get("max_bytes", DEFAULT_MAX_BYTES))

    def work(resolved: Path) -> ToolResult:
        shown = display_path(ctx, resolved)
        if resolved.is_dir():
            return error("IS_DIRECTORY", f"{shown} is a directory; use list_directory")
        with open_regular(resolved, shown) as f:
            info = os.fstat(f.fileno())
            check_text(f, shown, info.st_size, "read_file reads text in other encodings (its `encoding`)")
        cursor = StreamCursor(resolved, shown, 0, 1, lines, max_bytes, info.st_size, info.st_mtime_ns)
        return _next_chunk(ctx, secrets.token_hex(4), cursor)

    return await run_path_tool(ctx, params, path, work)


async def continue_stream_read(ctx: ToolContext, *, stream_id: str) -> ToolResult:
    params: dict[str, object] = {"stream_id": stream_id}
    started = time.perf_counter()
    cursor = _streams(ctx).get(stream_id)
    if cursor is None:
        open_ids = ", ".join(_streams(ctx)) or "none"
        result = error(
            "NOT_FOUND",
            f"no open stream {stream_id!r} (open streams: {open_ids}); finished streams are closed, "
            "start again with stream_read_file",
        )
        return finish_result(result, params, started)
    try:
        result = await asyncio.to_thread(_next_chunk, ctx, stream_id, cursor)
    except (OSError, Unreadable) as e:
        _streams(ctx).pop(stream_id, None)
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        result = error("NOT_FOUND", f"{cursor.shown} can no longer be read ({why}); stream closed")
    return finish_result(result, params, started, ctx.relative(cursor.path))


def _streams(ctx: ToolContext) -> dict[str, StreamCursor]:
    return ctx.state.of(FileStreams).cursors


def _next_chunk(ctx: ToolContext, stream_id: str, cursor: StreamCursor) -> ToolResult:
    info = cursor.path.stat()
    if (info.st_size, info.st_mtime_ns) != (cursor.size, cursor.mtime_ns):
        _streams(ctx).pop(stream_id, None)
        return error(
            "CONFLICT",
            f"{cursor.shown} changed since the stream started; start again with stream_read_file "
            f"(or read_file with start_line={cursor.next_line})",
        )
    lines, offset = _read_lines(cursor)
    first = cursor.next_line
    cursor.offset = offset
    cursor.next_line += len(lines)
    done = offset >= cursor.size
    data: dict[str, object] = {
        "content": "\n".join(lines),
        "start_line": first,
        "end_line": cursor.next_line - 1,
        "done": done,
        "stream_id": None if done else stream_id,
        "bytes_read": offset,
        "size": cursor.size,
    }
    if done:
        _streams(ctx).pop(stream_id, None)
        tail = f"[end of {cursor.shown}: the stream is finished]"
    else:
        _streams(ctx)[stream_id] = cursor
        percent = round(100 * offset / cursor.size) if cursor.size else 100
        tail = f"[{percent}% read; call continue_stream_read(stream_id={stream_id!r}) for the next chunk]"
    if not lines:
        return ToolResult.ok(f"{cursor.shown} is empty.\n{tail}", **data)
    header = f"{cursor.shown} lines {first}-{cursor.next_line - 1}:"
    return ToolResult.ok(f"{header}\n{numbered(lines, first)}\n{tail}", **data)


def _read_lines(cursor: StreamCursor) -> tuple[list[str], int]:
    """Up to chunk_lines lines (and about max_bytes) from the cursor's offset; a single line
    longer than max_bytes comes as consecutive pieces, each counted as a line."""
    lines: list[str] = []
    used = 0
    with open_regular(cursor.path, cursor.shown) as f:
        f.seek(cursor.offset)
        while len(lines) < cursor.chunk_lines:
            raw = f.readline(max(1, cursor.max_bytes - used) if lines else cursor.max_bytes)
            if not raw:
                break
            if lines and not raw.endswith(b"\n") and used + len(raw) >= cursor.max_bytes:
                f.seek(-len(raw), 1)  # would overflow the chunk: leave it for the next call
                break
            lines.append(raw.rstrip(b"\r\n").decode("utf-8", errors="replace"))
            used += len(raw)
            if used >= cursor.max_bytes:
                break
        return lines, f.tell()
