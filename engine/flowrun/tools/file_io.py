"""Plumbing shared by the file tools: the call wrapper (path check, thread, error mapping),
text sniffing, bounded line reading and atomic writes."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import errno
import fcntl
import functools
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import IO

from flowrun import pinned
from flowrun.atomic_files import fresh_temp
from flowrun.pinned import Moved, open_folder
from flowrun.settle import settle
from flowrun.tools.base import ToolContext, error, finish_result
from flowrun.tools.paths import PathDenied, display_path, resolve_path
from flowrun.types import ToolResult

SNIFF_BYTES = 8192
NEW_FILE_MODE = 0o644


class NotText(Exception):
    """The file is binary or not UTF-8; the tools report BINARY_FILE."""


class Unreadable(Exception):
    """A file the tools do not read (INVALID_PARAM): a FIFO, a device or a socket (reading one
    can wait forever: a FIFO nobody writes), or one over the size a tool reads whole."""


EXPECTED = (PathDenied, NotText, Unreadable, OSError)  # a path tool's work maps these to results


async def run_path_tool(
    ctx: ToolContext,
    params: Mapping[str, object],
    path: str,
    work: Callable[[Path], ToolResult],
    *,
    write: bool = False,
    enforce_paths: bool = True,
    follow_symlinks: bool = True,
) -> ToolResult:
    """Resolve `path` and run the blocking `work(resolved)` in a thread (resolving walks the
    path with one lstat per part: off the event loop too), map expected OS failures to error
    results and fill in stats/context."""
    started = time.perf_counter()

    def call() -> ToolResult:
        resolved: Path | None = None
        try:
            resolved = resolve_path(
                ctx, path, write=write, enforce_paths=enforce_paths, follow_symlinks=follow_symlinks
            )
            result = work(resolved)
        except EXPECTED as e:
            result = failure_result(ctx, e, path, resolved)
        return finish_result(result, params, started, ctx.shown(resolved) if resolved else None)

    return await asyncio.to_thread(call)


async def run_small_write(
    ctx: ToolContext,
    params: Mapping[str, object],
    path: str,
    work: Callable[[Path], Awaitable[ToolResult]],
) -> ToolResult:
    """run_path_tool for a write of one file whose size the tool bounds, on the event loop:
    `work` hands what waits for the disk (the fsync, atomic_write_on_loop) to a thread. A hop
    of the whole work to a thread costs more CPU than the work: each of its dozen system calls
    hands the interpreter lock between the thread and the loop's thread (54-62 context switches
    per batch item, against 14-15 with the fsync alone in a thread)."""
    started = time.perf_counter()
    resolved: Path | None = None
    try:
        resolved = resolve_path(ctx, path, write=True)
        result = await work(resolved)
    except EXPECTED as e:
        result = failure_result(ctx, e, path, resolved)
    return finish_result(result, params, started, ctx.shown(resolved) if resolved else None)


def failure_result(ctx: ToolContext, e: Exception, path: str, resolved: Path | None) -> ToolResult:
    """The error result of an expected failure of a path tool's work."""
    if isinstance(e, PathDenied):
        return e.to_result()
    if isinstance(e, NotText):
        return error("BINARY_FILE", str(e))
    if isinstance(e, Unreadable):
        return error("INVALID_PARAM", str(e))
    if isinstance(e, Moved):  # a concurrent command swapped a folder on the way for a symlink
        shown = display_path(ctx, resolved) if resolved else path
        return error("ACCESS_DENIED", f"{shown} changed while it was being opened; nothing was done to it")
    assert isinstance(e, OSError)
    return oserror_result(e, display_path(ctx, resolved) if resolved else path)


def oserror_result(e: OSError, shown: str) -> ToolResult:
    if isinstance(e, FileNotFoundError):
        return error("NOT_FOUND", f"{shown} does not exist")
    if isinstance(e, IsADirectoryError):
        return error("IS_DIRECTORY", f"{shown} is a directory")
    if isinstance(e, NotADirectoryError | FileExistsError):  # mkdir of a folder that is a file
        return error("INVALID_PARAM", f"a parent of {shown} is a file, not a directory")
    if isinstance(e, PermissionError):
        return error("PERMISSION_DENIED", f"the operating system refused access to {shown}")
    return error("INTERNAL", f"{shown}: {e.strerror or e}")


def looks_binary(sample: bytes) -> bool:
    """NUL bytes or invalid UTF-8 (a multi-byte character cut at the sample's end is fine)."""
    if b"\x00" in sample:
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=False)
    except UnicodeDecodeError:
        return True
    return False


# what a tool with an `encoding` parameter says of a file that is not UTF-8
ENCODING_HINT = "if it is text in another encoding, give `encoding` (e.g. gbk, latin-1, utf-16)"


def check_text(f: IO[bytes], shown: str, size: int, hint: str = ENCODING_HINT) -> None:
    """Raise NotText when the start of an open file is not UTF-8 text; rewinds the file."""
    sample = f.read(SNIFF_BYTES)
    f.seek(0)
    if looks_binary(sample):
        raise NotText(f"{shown} is a binary or non-UTF-8 file ({size} bytes); {hint}")


def normal_encoding(encoding: str) -> str:
    """The codec's canonical name (`UTF8` -> `utf-8`); LookupError for an unknown one."""
    return codecs.lookup(encoding).name


def is_utf8(encoding: str) -> bool:
    return normal_encoding(encoding) == "utf-8"


def encoding_problem(encoding: str) -> str | None:
    """Why `encoding` cannot be used for a text file, or None."""
    shown = repr(encoding[:60]) if isinstance(encoding, str) else repr(encoding)
    try:
        info = codecs.lookup(encoding)
    except (LookupError, TypeError, ValueError):  # ValueError: a NUL in the name
        return f"unknown encoding {shown}; use a Python codec name such as utf-8, latin-1, utf-16, gbk"
    if not getattr(info, "_is_text_encoding", True):
        return f"{shown} is not a text encoding"
    return None


def encode_text(text: str, encoding: str, shown: str) -> bytes | ToolResult:
    """`text` in `encoding`, or an INVALID_PARAM result naming the first character it lacks."""
    try:
        return text.encode(encoding)
    except UnicodeEncodeError as e:
        bad = text[e.start : e.end]
        return error(
            "INVALID_PARAM", f"{shown}: {bad!r} cannot be written in {encoding}; use another encoding"
        )


def open_regular(path: Path, shown: str) -> IO[bytes]:
    """`path` opened for reading as checked and without ever waiting (pinned.open_regular):
    anything but a regular file is Unreadable (a folder: IsADirectoryError)."""
    try:
        return pinned.open_regular(path)
    except pinned.NotRegular as e:
        raise Unreadable(
            f"{shown} is {e.kind}, not a regular file; the file tools read regular files only"
        ) from None


def read_regular(path: Path, shown: str, limit: int | None = None) -> bytes:
    """The whole file; Unreadable when it is over `limit` bytes (memory goes to a file read whole,
    a few times over when it is decoded and written back)."""
    with open_regular(path, shown) as f:
        size = os.fstat(f.fileno()).st_size
        if limit is not None and size > limit:
            raise Unreadable(
                f"{shown} is {human_size(size)}, over the {human_size(limit)} this tool reads whole "
                "(its `max_bytes`); change it another way, or raise max_bytes"
            )
        return f.read()


def read_text(path: Path, shown: str, encoding: str = "utf-8", limit: int | None = None) -> str:
    """The whole file as text in `encoding` (at most `limit` bytes), or NotText."""
    data = read_regular(path, shown, limit)
    if not is_utf8(encoding):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError as e:
            raise NotText(f"{shown} is not valid {encoding} (byte {e.start}); give its `encoding`") from e
    if looks_binary(data[:SNIFF_BYTES]):
        raise NotText(f"{shown} is a binary or non-UTF-8 file ({len(data)} bytes); {ENCODING_HINT}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise NotText(f"{shown} is not valid UTF-8 (byte {e.start}); {ENCODING_HINT}") from e


def iter_lines(f: IO[bytes], limit: int) -> Iterator[tuple[bytes, bool]]:
    """Yield (line without its newline, cut) keeping at most `limit` bytes of each line, so a
    gigabyte-long line never sits in memory whole."""
    while True:
        chunk = f.readline(limit)
        if not chunk:
            return
        if chunk.endswith(b"\n"):
            yield chunk[:-1].removesuffix(b"\r"), False
            continue
        cut = False
        while True:  # skip the rest of an over-long line
            rest = f.readline(1 << 16)
            if not rest:
                break
            cut = cut or rest not in (b"\n", b"\r\n")
            if rest.endswith(b"\n"):
                break
        yield chunk.removesuffix(b"\r"), cut


def numbered(lines: list[str], first: int) -> str:
    """`cat -n` style: the number, a tab, the line."""
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, first))


_UPDATE_LOCKS: dict[str, threading.Lock] = {}
_UPDATE_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def file_update(path: Path) -> Iterator[None]:
    """Around a read-modify-write of `path` (an append, an edit): one at a time, so agents
    running at once that append to one file lose nothing. In this process a lock per path;
    across processes an `flock` on the file's folder, where the filesystem allows one."""
    with _UPDATE_LOCKS_GUARD:
        lock = _UPDATE_LOCKS.setdefault(str(path), threading.Lock())
    with lock:
        folder = None
        with contextlib.suppress(OSError):
            folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
            fcntl.flock(folder, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if folder is not None:
                os.close(folder)  # releases the flock


def atomic_write(path: Path, data: bytes, *, exclusive: bool = False) -> None:
    """Write via a temp file in the same folder and an atomic rename; `exclusive` never
    replaces an existing file (FileExistsError). Keeps the mode of a file it replaces. The
    folder (made when missing) is opened pinned to the checked path and everything after is
    done by name in it (flowrun/pinned.py): a folder swapped for a symlink meanwhile is Moved."""
    with _temp_beside(path) as (folder, fd, tmp):
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        _put_in_place(folder, tmp, path.name, exclusive)


async def atomic_write_on_loop(path: Path, data: bytes, *, exclusive: bool = False) -> None:
    """atomic_write from the event loop: only the fsync runs in a worker thread, and a cancel
    waits for it (the temp file is then removed, the file left as it was)."""
    with _temp_beside(path) as (folder, fd, tmp):
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            await settle(functools.partial(os.fsync, f.fileno()))
        _put_in_place(folder, tmp, path.name, exclusive)


@contextlib.contextmanager
def _temp_beside(path: Path) -> Iterator[tuple[int, int, str]]:
    """(the folder, a new temp file in it, its name); both closed and the temp removed after."""
    folder = open_folder(path.parent, make=True)
    try:
        fd, tmp = fresh_temp(folder, path.name, 0o600)  # (its mode is set once written)
        try:
            yield folder, fd, tmp
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=folder)
    finally:
        os.close(folder)


def _put_in_place(folder: int, tmp: str, name: str, exclusive: bool) -> None:
    """The written temp file becomes `name`, with the mode of the file it replaces."""
    try:
        mode = os.stat(name, dir_fd=folder).st_mode & 0o7777
    except FileNotFoundError:
        mode = NEW_FILE_MODE
    os.chmod(tmp, mode, dir_fd=folder)
    if exclusive:
        _link_exclusive(folder, tmp, name)
    else:
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)


def _link_exclusive(folder: int, tmp: str, name: str) -> None:
    try:
        # fails if `name` exists: no window where another file is clobbered
        os.link(tmp, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
    except FileExistsError:
        raise
    except OSError:  # a filesystem without hard links
        try:
            os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
            return
        raise FileExistsError(errno.EEXIST, "exists", name) from None


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
