"""A memory's folder as the memory tool, `flowrun memory` and the HTTP API touch it.

Paths are the memory tool's: `/memories` is the folder, `/memories/notes/x.md` a file in it. A
path is refused before anything is looked at when it would leave the folder or reach what is not
a memory file: `..` or `.` parts, another absolute path, a backslash, a hidden name (`.git`, the
lock), a NUL. A symlink anywhere on the way is refused too (never followed, in or out: a planted
link must not turn a write into one outside); reads open the file pinned to its checked path and
writes go through a folder opened so (flowrun/pinned.py), so a swap between the check and the
open fails instead of moving the write. Files are replaced whole through a temp file
(flowrun/atomic_files.py): a reader, or a kill, sees the old file or the new one, never half.

Writers of one memory are serialised: in one process by an asyncio lock per folder, across
processes (batch workers) by `flock` on the folder itself, so no file is left in it for this."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import hashlib
import os
import shutil
import stat
import weakref
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

from flowrun.atomic_files import replace_beneath
from flowrun.pinned import FOLDER, TooLarge, open_folder, open_regular, read_checked, walk

VIRTUAL = "/memories"  # what the memory tool calls the folder
MAX_PARTS = 32  # a memory is a few files and folders, not a tree of any depth
MAX_PART = 255


class Refused(Exception):
    """A call the memory refuses (a path that leaves it, a cap, a missing file): the tool's
    error result, one line."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Caps:
    max_file_bytes: int = 100_000
    max_bytes: int = 1_000_000


@dataclass(frozen=True, slots=True)
class Entry:
    rel: str  # relative to the folder, "/"-separated
    size: int
    folder: bool = False
    mtime_ns: int = 0


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class MemoryFolder:
    """One memory's folder (it may not exist yet: it is made by the first write)."""

    def __init__(self, root: Path, caps: Caps | None = None) -> None:
        self.root = root
        self.caps = caps or Caps()

    def real_root(self) -> Path:
        """The folder without symlinks (a person may keep it behind one; nothing in it is)."""
        return Path(os.path.realpath(self.root))

    # ------------------------------------------------------------ paths

    def rel(self, path: object, what: str = "path") -> str:
        """The relative path a memory tool path names ("" for /memories itself), or Refused."""
        if not isinstance(path, str) or not path.strip():
            raise Refused("INVALID_PARAM", f"{what} must be a path under {VIRTUAL}, e.g. {VIRTUAL}/MEMORY.md")
        if "\x00" in path or "\\" in path:
            raise Refused("ACCESS_DENIED", f"{what} {path!r} has a NUL or a backslash; use / between parts")
        if path != VIRTUAL and not path.startswith(VIRTUAL + "/"):
            raise Refused(
                "ACCESS_DENIED",
                f"{what} {path!r} is outside {VIRTUAL}; every memory path starts with {VIRTUAL}/",
            )
        parts = [p for p in path[len(VIRTUAL) :].split("/") if p]
        for part in parts:
            if part in (".", ".."):
                raise Refused(
                    "ACCESS_DENIED",
                    f"{what} {path!r} has a '{part}' part; name the file by its path under {VIRTUAL}",
                )
            if part.startswith("."):
                raise Refused(
                    "ACCESS_DENIED", f"{what} {path!r} names a hidden file; memory files have visible names"
                )
            if len(part.encode("utf-8", "surrogatepass")) > MAX_PART:
                raise Refused("INVALID_PARAM", f"{what} has a name over {MAX_PART} bytes; use a shorter name")
        if len(parts) > MAX_PARTS:
            raise Refused("INVALID_PARAM", f"{what} is nested {len(parts)} levels deep, over {MAX_PARTS}")
        try:
            os.fsencode("/".join(parts))
        except UnicodeEncodeError:
            raise Refused("INVALID_PARAM", f"{what} has a character no file name holds") from None
        return "/".join(parts)

    @staticmethod
    def virtual(rel: str) -> str:
        return f"{VIRTUAL}/{rel}" if rel else VIRTUAL

    def target(self, rel: str) -> Path:
        """`rel` in the folder, each part that exists checked not to be a symlink."""
        path = self.real_root()
        for part in rel.split("/") if rel else []:
            path = path / part
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                break
            except OSError as e:
                raise Refused("ACCESS_DENIED", f"{self.virtual(rel)}: {e.strerror or e}") from None
            if stat.S_ISLNK(mode):
                where = self.virtual(path.relative_to(self.real_root()).as_posix())
                raise Refused("ACCESS_DENIED", f"{where} is a symlink; the memory never follows links")
        return self.real_root() / rel if rel else self.real_root()

    def kind(self, rel: str) -> str | None:
        """ "file", "folder", "other" (a FIFO, a device) or None (nothing there)."""
        try:
            mode = os.lstat(self.target(rel)).st_mode
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            return None
        if stat.S_ISDIR(mode):
            return "folder"
        return "file" if stat.S_ISREG(mode) else "other"

    # ------------------------------------------------------------ reading

    def read_bytes(self, rel: str, limit: int | None = None) -> bytes:
        """A memory file whole (at most `limit` bytes, default the file cap), or Refused."""
        limit = limit if limit is not None else self.caps.max_file_bytes
        where = self.virtual(rel)
        found = self.kind(rel)
        if found is None:
            raise Refused("NOT_FOUND", f"the path {where} does not exist")
        if found != "file":
            raise Refused(
                "INVALID_PARAM", f"{where} is {'a folder' if found == 'folder' else 'not a regular file'}"
            )
        try:
            return read_checked(self.target(rel), limit)
        except TooLarge:
            raise Refused("TOO_LARGE", f"{where} is over {limit} bytes, the memory's cap per file") from None
        except OSError as e:
            raise Refused("ACCESS_DENIED", f"{where} cannot be read: {e.strerror or e}") from None

    def read_text(self, rel: str, limit: int | None = None) -> str:
        data = self.read_bytes(rel, limit)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused("INVALID_PARAM", f"{self.virtual(rel)} is not UTF-8 text") from None

    def entries(self, rel: str = "", depth: int | None = None) -> list[Entry]:
        """What is below `rel` (none when it does not exist): regular files and folders in name
        order, hidden names and symlinks left out, at most `depth` levels down."""
        top = self.target(rel)
        if self.kind(rel) != "folder":
            return []
        found: list[Entry] = []
        with contextlib.suppress(OSError):
            for path in walk(top, ignore=(".git",)):
                inner = path.relative_to(top)
                if any(part.startswith(".") for part in inner.parts):
                    continue
                if depth is not None and len(inner.parts) > depth:
                    continue
                with contextlib.suppress(OSError):
                    info = os.lstat(path)
                    own = path.relative_to(self.real_root()).as_posix()
                    if stat.S_ISDIR(info.st_mode):
                        found.append(Entry(own, 0, folder=True))
                    elif stat.S_ISREG(info.st_mode):
                        found.append(Entry(own, info.st_size, mtime_ns=info.st_mtime_ns))
        return sorted(found, key=lambda e: e.rel)

    def files(self) -> list[Entry]:
        return [e for e in self.entries() if not e.folder]

    def total_bytes(self) -> int:
        return sum(e.size for e in self.files())

    def state(self) -> dict[str, str]:
        """Each memory file's sha256, by its path relative to the folder."""
        out: dict[str, str] = {}
        for entry in self.files():
            with contextlib.suppress(OSError, Refused):
                out[entry.rel] = file_sha256(self.target(entry.rel))
        return out

    # ------------------------------------------------------------ writing (under `writing`)

    def replace(self, rel: str, data: bytes) -> None:
        """`rel` replaced whole with `data` (its folders made), atomically."""
        try:
            replace_beneath(self.real_root(), self.target(rel), data)
        except OSError as e:
            raise Refused(
                "ACCESS_DENIED", f"{self.virtual(rel)} cannot be written: {e.strerror or e}"
            ) from None

    def remove(self, rel: str) -> None:
        """The file or folder `rel` removed (a folder with everything in it; links are removed,
        never followed)."""
        path = self.target(rel)
        try:
            if self.kind(rel) == "folder":
                shutil.rmtree(path)
                return
            parent = open_folder(path.parent)
            try:
                os.unlink(path.name, dir_fd=parent)
            finally:
                os.close(parent)
        except OSError as e:
            raise Refused(
                "ACCESS_DENIED", f"{self.virtual(rel)} cannot be removed: {e.strerror or e}"
            ) from None

    def move(self, old: str, new: str) -> None:
        """`old` renamed to `new` (its folders made)."""
        source, dest = self.target(old), self.target(new)
        try:
            src_folder = open_folder(source.parent)
            try:
                dst_folder = open_folder(dest.parent, make=True)
                try:
                    os.rename(source.name, dest.name, src_dir_fd=src_folder, dst_dir_fd=dst_folder)
                finally:
                    os.close(dst_folder)
            finally:
                os.close(src_folder)
        except OSError as e:
            raise Refused(
                "ACCESS_DENIED", f"{self.virtual(old)} cannot be renamed: {e.strerror or e}"
            ) from None


def copy_files(source: MemoryFolder, target: MemoryFolder) -> None:
    """Every memory file of `source` written into `target` (a dry run's copy): regular files with
    visible names only, never through a link."""
    for entry in source.files():
        with contextlib.suppress(Refused):
            target.replace(entry.rel, source.read_bytes(entry.rel, limit=max(entry.size, 1)))


def line_count(text: str) -> int:
    """Lines as a person counts them: a last line without its newline counts too."""
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def measure_index(path: Path, limit: int = 4 << 20) -> tuple[int, int] | None:
    """The lines and bytes of an index file (read up to `limit`), None when there is none (or it
    is not a regular file: a FIFO planted there is never waited on)."""
    try:
        with open_regular(path, pin=False) as f:
            raw = f.read(limit)
    except OSError:
        return None
    return line_count(raw.decode("utf-8", "replace")), len(raw)


def index_state(where: str) -> str:
    """An index as the check cache probes it (`LINES:BYTES:PATH`, its caps and path): none, within
    its caps, or over them with its size (the warning names it; manifest/checks/memory.py)."""
    lines_cap, bytes_cap, path = where.split(":", 2)
    measured = measure_index(Path(path))
    if measured is None:
        return "none"
    lines, size = measured
    return "within" if lines <= int(lines_cap) and size <= int(bytes_cap) else f"over {lines} {size}"


def file_sha256(path: Path) -> str:
    found = hashlib.sha256()
    with open_regular(path) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            found.update(block)
    return found.hexdigest()


# ---------------------------------------------------------------- one writer at a time

_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


@contextlib.asynccontextmanager
async def writing(folder: MemoryFolder) -> AsyncIterator[None]:
    """Held while a writer reads, changes and indexes the memory: one per folder in this
    process, and one across processes (`flock` on the folder, taken in a worker thread)."""
    real = str(folder.real_root())
    locks = _LOCKS.setdefault(asyncio.get_running_loop(), {})
    async with locks.setdefault(real, asyncio.Lock()):
        fd = await asyncio.to_thread(_flock, folder)
        try:
            yield
        finally:
            os.close(fd)  # (closing the descriptor releases the flock)


@contextlib.contextmanager
def locked(folder: MemoryFolder) -> Iterator[None]:
    """`writing` for a command outside a run (`flowrun memory edit`): the flock only."""
    fd = _flock(folder)
    try:
        yield
    finally:
        os.close(fd)


def _flock(folder: MemoryFolder) -> int:
    """The folder (made when missing) opened and flock-ed exclusively; its descriptor."""
    try:
        fd = open_folder(folder.real_root(), make=True)
    except OSError as e:
        raise Refused(
            "ACCESS_DENIED", f"the memory folder {folder.root} cannot be made: {e.strerror or e}"
        ) from None
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                return fd
            except InterruptedError:
                continue
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.ENOLCK, errno.EOPNOTSUPP):  # a filesystem without flock: one process only
            return os.open(folder.real_root(), FOLDER)
        raise
