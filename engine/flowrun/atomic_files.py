"""Files the engine replaces whole (run.json, usage.json, an agent's output, a compaction's
transcript) in folders that tools can write too.

A shell tool may leave anything in the run folder or the workspace: a symlink where the engine
puts its temp file, a FIFO, a folder swapped for a symlink while another call runs. The engine
runs outside the sandbox, so a write that followed one would land wherever the link points
(a `.run.json.tmp` linked to `~/.bashrc` had the run's end rewrite that file). Here:
- the temp file is opened without following a symlink and without waiting on a FIFO, and is
  used only when it is a regular file with one link; otherwise a fresh temp with a random name
  is made (O_EXCL), so what a tool left in the way neither redirects nor blocks the write;
- the temp is renamed over the target: a symlink at the target is replaced, never written
  through, and a reader (or a crash) sees the old file or the new one, never half;
- `replace_beneath` opens the folder pinned to its checked real path (flowrun/pinned.py), so a
  folder swapped for a symlink between the check and the write fails the write instead of
  moving it.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

from flowrun.pinned import open_folder

# O_NONBLOCK: opening a FIFO for writing with no reader fails at once (ENXIO) instead of waiting
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FRESH_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_MODE = 0o666  # less the umask, as open() makes files
# what opening the usual temp name says when something a tool left is there: a symlink (ELOOP),
# a FIFO with no reader or a socket (ENXIO), a folder (EISDIR)
_IN_THE_WAY = frozenset({errno.ELOOP, errno.ENXIO, errno.EISDIR})


class LeavesRoot(OSError):
    """A folder on the way to a target leads out of the root (a symlink, or '..')."""


def temp_name(name: str) -> str:
    """The temp file beside `name` (`.run.json.tmp`): what a crash mid-write leaves."""
    return f".{name[:200]}.tmp"


def replace_file(path: Path, data: str | bytes) -> None:
    """`path` replaced whole with `data` (str as UTF-8), through a temp file beside it. For the
    engine's own folders, which a tool cannot swap (the run folder is the sandbox's root, or
    outside it); a folder under the workspace goes through `replace_beneath`."""
    _replace(None, str(path.parent), path.name, data)


def replace_in(folder: int, name: str, data: str | bytes) -> None:
    """`name` in the folder open as `folder` replaced whole with `data`: by name, so a folder a
    tool moved or swapped for a symlink since it was opened cannot redirect the write."""
    _replace(folder, None, name, data)


def replace_beneath(root: Path, target: Path, data: str | bytes) -> None:
    """`target` (under `root`) replaced whole with `data`, its missing folders made. A symlink
    on the way is followed only when it stays under `root` (checked on the real paths); the
    folder is then opened pinned to that real path (flowrun/pinned.py), so one a tool swaps
    meanwhile fails the write (Moved) rather than taking it out of `root`."""
    real_root = Path(os.path.realpath(root))
    parent = Path(os.path.realpath(target.parent))
    if not parent.is_relative_to(real_root):
        raise LeavesRoot(f"{target.parent} leads out of {root}")
    folder = open_folder(parent, make=True)
    try:
        _replace(folder, None, target.name, data)
    finally:
        os.close(folder)


def _replace(folder: int | None, where: str | None, name: str, data: str | bytes) -> None:
    """`name` in `folder` (a descriptor) or in the folder path `where`, replaced by a temp file."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = _open_temp(folder, where, name)
    try:
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(_at(where, tmp), _at(where, name), src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        try:
            os.unlink(_at(where, tmp), dir_fd=folder)
        except OSError:
            pass
        raise


def _at(where: str | None, entry: str) -> str:
    """An entry of the folder: by its path, or by name when the folder is a descriptor."""
    return entry if where is None else os.path.join(where, entry)


def _open_temp(folder: int | None, where: str | None, name: str) -> tuple[int, str]:
    """An empty regular temp file of our own beside `name`: the usual name, or a fresh one when
    something else is there (a symlink, a FIFO, a folder, a file with a second link)."""
    tmp = temp_name(name)
    try:
        fd = os.open(_at(where, tmp), _TEMP_FLAGS, FILE_MODE, dir_fd=folder)
    except OSError as e:
        if e.errno not in _IN_THE_WAY:  # (too many files open, no space, no permission: as it is)
            raise
        return fresh_temp(folder, name, where=where)
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
        if info.st_size:
            os.ftruncate(fd, 0)
        return fd, tmp
    os.close(fd)
    return fresh_temp(folder, name, where=where)


def fresh_temp(
    folder: int | None, name: str, mode: int = FILE_MODE, *, where: str | None = None
) -> tuple[int, str]:
    """A new temp file beside `name` with a random name (O_EXCL: nothing there is opened), in
    `folder` (a descriptor) or the folder path `where`; its descriptor and name."""
    for _ in range(100):
        tmp = f".{name[:180]}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(_at(where, tmp), _FRESH_FLAGS, mode, dir_fd=folder), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temp name", name)
