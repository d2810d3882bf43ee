"""Opening exactly the file or folder a path check approved, not what is there a moment later.

The file tools check a path (symlinks resolved, inside the workspace) and then open it. A shell
command running at the same time (the calls of one model response run concurrently) can swap a
folder on that path for a symlink in between, and an open by path would follow it out of the
workspace: a read of `~/.ssh/id_rsa`, a write into `~/.ssh`. Here a descriptor is kept only
when the kernel's own path for it (`/proc/self/fd/N`) is the checked path; otherwise it is
closed and `Moved` raised. Writes, removals and listings then work relative to a folder opened
this way, by name, so nothing after the check goes through a path again. Where /proc is not
mounted the check cannot be made and the descriptor is kept (flowrun's sandbox needs Linux and
its /proc anyway)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, BinaryIO

FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
FOLDER_MODE = 0o777  # less the umask, as mkdir makes folders
MAX_DEPTH = 256  # how deep a walk goes (the file tools take paths of at most 256 parts)


class Moved(OSError):
    """What a path named changed between its check and its opening (a folder on the way became
    a symlink, the file was replaced): nothing was read or written."""


def kernel_path(fd: int) -> str | None:
    """The path the kernel holds for an open descriptor; None without /proc."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def open_pinned(path: Path, flags: int, mode: int = 0o666) -> int:
    """`path` (absolute, symlink-free: resolved) opened with `flags`; Moved when the descriptor
    is not that path's file."""
    fd = os.open(path, flags | os.O_CLOEXEC, mode)
    held = kernel_path(fd)
    # (a case-insensitive filesystem, WSL's /mnt/c, gives the name as stored: not a move)
    if held is not None and held != str(path) and held.casefold() != str(path).casefold():
        os.close(fd)
        raise Moved(f"{path} changed while it was being opened (now {held})")
    return fd


def open_folder(path: Path, *, make: bool = False) -> int:
    """The folder `path` (resolved) opened as `open_pinned` does; with `make`, the folders
    missing on the way are made, each opened by name from its parent without following a
    symlink."""
    try:
        return open_pinned(path, FOLDER)
    except FileNotFoundError:
        if not make or path.parent == path:
            raise
    parent = open_folder(path.parent, make=True)
    try:
        try:
            os.mkdir(path.name, FOLDER_MODE, dir_fd=parent)
        except FileExistsError:
            pass
        try:
            return os.open(path.name, FOLDER | os.O_NOFOLLOW, dir_fd=parent)
        except OSError as e:
            if e.errno != errno.ELOOP:
                raise
            raise Moved(f"{path} became a symlink while its folders were being made") from None
    finally:
        os.close(parent)


class TooLarge(OSError):
    """A file over the size its reader takes."""


class NotRegular(OSError):
    """A FIFO, a socket or a device where a file was to be read (reading one can wait forever:
    a FIFO nobody writes); `kind` says which."""

    def __init__(self, path: Path, kind: str) -> None:
        super().__init__(errno.EINVAL, f"{kind}, not a regular file", str(path))
        self.kind = kind


def open_regular(path: Path, *, pin: bool = True) -> BinaryIO:
    """The regular file `path` (resolved) opened for reading as `open_pinned` does, without ever
    waiting (O_NONBLOCK: a FIFO's open returns at once); IsADirectoryError for a folder,
    NotRegular for anything else. Without `pin`, any path, opened as `open` does (the engine's
    own files, read by its commands: a FIFO left there must not hang them)."""
    flags = os.O_RDONLY | os.O_NONBLOCK
    fd = open_pinned(path, flags) if pin else os.open(path, flags | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
        if not stat.S_ISREG(mode):
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
            raise NotRegular(path, kind)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_whole(path: Path) -> bytes:
    """The regular file `path` read whole, opened as `open_regular(path, pin=False)` does (the
    engine's own files: run.json, a log; the file tools read through tools/file_io.py)."""
    with open_regular(path, pin=False) as f:
        return f.read()


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in the regular file `path` (run.json, usage.json, ...); {} when it is
    missing, unreadable, not a regular file (never waited on), not JSON or not an object."""
    try:
        value = json.loads(read_whole(path))
    except (OSError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def read_checked(path: Path, limit: int, *, cut: bool = False) -> bytes:
    """The regular file `path` (resolved) read whole, opened as `open_regular` does; Moved,
    TooLarge (over `limit` bytes, also when it grows while read; with `cut`, its first `limit`
    bytes instead), or another OSError (IsADirectoryError, NotRegular)."""
    with open_regular(path) as f:
        if os.fstat(f.fileno()).st_size > limit and not cut:
            raise TooLarge(errno.EFBIG, f"over {limit} bytes", str(path))
        data = f.read(limit + 1)
    if len(data) > limit:
        if cut:
            return data[:limit]
        raise TooLarge(errno.EFBIG, f"over {limit} bytes", str(path))
    return data


def walk(root: Path, ignore: Collection[str] = (), max_depth: int = MAX_DEPTH) -> Iterator[Path]:
    """Every entry below `root` (resolved) but the names in `ignore`: a folder's entries in name
    order, then each sub-folder's, never entering a symlinked folder nor one more than
    `max_depth` deep (a shell can nest thousands; os.walk and os.fwalk recurse, and fail).
    From `root` opened pinned to its checked path, each folder is opened by name from its
    parent without following a symlink, so one a command swaps for a symlink during the walk
    is not entered. One descriptor per level; no recursion."""
    top = open_folder(root)
    stack: list[tuple[int, Path, Iterator[str]]] = []  # open folders with the sub-folders left
    try:
        folder: int | None = top
        base = root
        while folder is not None:
            names, subfolders = _entries(folder, ignore)
            yield from (base / name for name in names)
            stack.append((folder, base, iter(subfolders if len(stack) < max_depth else [])))
            folder = None
            while stack and folder is None:
                parent, parent_base, left = stack[-1]
                for name in left:
                    with contextlib.suppress(OSError):  # a symlink now (ELOOP), or gone: not entered
                        folder = os.open(name, FOLDER | os.O_NOFOLLOW, dir_fd=parent)
                        base = parent_base / name
                        break
                else:
                    os.close(parent)
                    stack.pop()
    finally:
        for parent, _, _ in stack:
            os.close(parent)


def _entries(folder: int, ignore: Collection[str]) -> tuple[list[str], list[str]]:
    """(every name but the ignored ones, the real sub-folders among them), in name order."""
    names, subfolders = [], []
    with os.scandir(folder) as found:
        for entry in found:
            if entry.name in ignore:
                continue
            names.append(entry.name)
            with contextlib.suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    subfolders.append(entry.name)
    return sorted(names), sorted(subfolders)
