"""Who owns a run folder, and whether a new run may use it.

One process at a time: `run`, `resume` and `replay` (and the Python API) hold an exclusive
`flock` on `run.lock` in the folder from before they read or write anything there until they
leave, however they leave. The file holds the owner's pid, so a second process is told which
one to wait for. The kernel drops the lock when its process dies, so the lock of a killed run
is simply taken over; the file is removed on release.

A run id is a name, never a path. A new run may use a folder that is missing, empty, or was made
by a run that was stopped before its first event (nothing ran in it yet)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import itertools
import json
import os
import stat
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from flowrun.atomic_files import replace_file, temp_name
from flowrun.errors import RunError, RunInUse, UsageError
from flowrun.pinned import open_regular
from flowrun.records import RunRecord

LOCK_NAME = "run.lock"
ENGINE_FILES = frozenset({"run.json", "events.jsonl", "usage.json", "flowrun.log"})
# what an atomic write of run.json or usage.json leaves when the process dies in the middle
ENGINE_TEMPS = frozenset({temp_name("run.json"), temp_name("usage.json")})
# what no tool, shell or MCP server may write or delete in a run folder: the engine's files, the
# lock, the recorded prompts and the run's memories (only the memory tool changes them, recorded)
# (a name ending in "/" is a folder, protected with its contents)
PROTECTED = ENGINE_FILES | {LOCK_NAME, "prompts/", "memory/"}
MAX_RUN_ID = 200
OWNER_READS = 20  # x 10 ms: how long a refused process waits to read the owner's pid


def check_run_id(run_id: str) -> str:
    """`run_id` when it names a folder directly under the runs folder; UsageError otherwise."""
    hint = "a run id is a folder name: letters, digits, '-', '_' and '.', no '/' (use --runs-dir for where)"
    if not run_id or not run_id.strip():
        raise UsageError("the run id is empty", hint)
    if "/" in run_id or "\\" in run_id or os.sep in run_id or (os.altsep and os.altsep in run_id):
        raise UsageError(f"run id {run_id!r} contains a path separator", hint)
    if run_id in (".", ".."):
        raise UsageError(f"run id {run_id!r} is not a name", hint)
    if any(ord(c) < 32 or ord(c) == 127 for c in run_id):
        raise UsageError(f"run id {run_id!r} contains a control character", hint)
    if len(run_id) > MAX_RUN_ID:
        raise UsageError(f"the run id is {len(run_id)} characters long (at most {MAX_RUN_ID})", hint)
    try:
        run_id.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"run id {run_id!r} is not valid UTF-8", hint) from None
    return run_id


class RunFolderLock:
    """`with RunFolderLock(run_dir):` makes the folder if needed and owns it until the block
    ends. RunInUse when a live process holds it."""

    def __init__(self, run_dir: Path, *, create: bool = True) -> None:
        self.run_dir = run_dir
        self.create = create
        self.path = run_dir / LOCK_NAME
        self._fd: int | None = None
        self.previous_owner: int | None = None  # pid in a lock file we took over (it had died)

    def __enter__(self) -> RunFolderLock:
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    async def __aenter__(self) -> RunFolderLock:
        # a cancel pending for the caller (a batch stopped as this item was handed out) lands
        # here, before the folder is touched; then the lock is taken on the loop without
        # awaiting (a thread hop costs more CPU than these few file operations), so no cancel
        # lands between taking it and using it
        await asyncio.sleep(0)
        self.acquire()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()  # nothing awaited: the block's outcome is what the caller gets

    def acquire(self) -> None:
        if self.create:
            make_folder(self.run_dir)
        elif not self.run_dir.is_dir():
            raise RunError(f"there is no run folder {self.run_dir}", "check the path (see `flowrun runs`)")
        try:
            self._fd, self.previous_owner = take_lock(self.path)
        except LockHeld as held:
            raise RunInUse(
                f"run is in use by {held.holder} ({self.run_dir})",
                "wait for it to end, or stop it (Ctrl-C, or `kill PID`) and resume",
            ) from None
        except OSError as e:
            raise UsageError(
                f"cannot write in the run folder {self.run_dir}: {e.strerror or e}",
                "choose a writable --runs-dir",
            ) from None

    def release(self) -> None:
        if self._fd is not None:
            drop_lock(self.path, self._fd)
            self._fd = None


class LockHeld(Exception):
    """A live process holds the lock file: `owner`, its pid (None when it could not be read)."""

    def __init__(self, owner: int | None) -> None:
        super().__init__(owner)
        self.owner = owner

    @property
    def holder(self) -> str:
        """Who holds it, for a message: `pid N`, or `another process`."""
        return f"pid {self.owner}" if self.owner else "another process"


def take_lock(path: Path) -> tuple[int, int | None]:
    """An exclusive `flock` on `path` (made if missing) that names this process: its descriptor,
    and the pid the file named before (an owner that died). LockHeld when a live process holds
    it; OSError when it cannot be opened. A run folder's lock and a batch folder's."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = _owner_pid(fd)
            os.close(fd)
            raise LockHeld(owner) from None
        if _still_the_file(path, fd):
            break
        os.close(fd)  # the owner removed it as we opened it: lock the new one
    previous = _read_pid(fd)
    mine = f"{os.getpid()}\n".encode()
    os.pwrite(fd, mine, 0)  # then cut: the file is never empty for a process reading the owner
    os.ftruncate(fd, len(mine))
    return fd, previous


def drop_lock(path: Path, fd: int) -> None:
    """Let go of a lock take_lock took: the file is removed, then closing drops the flock."""
    with contextlib.suppress(OSError):
        path.unlink()
    os.close(fd)


def _still_the_file(path: Path, fd: int) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def _owner_pid(fd: int) -> int | None:
    """The lock owner's pid; it may be about to write it (a lock taken a moment ago), so an
    empty file is read again for a short while."""
    for _ in range(OWNER_READS):
        owner = _read_pid(fd)
        if owner is not None:
            return owner
        time.sleep(0.01)
    return None


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def make_folder(run_dir: Path) -> None:
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise UsageError(
            f"cannot use {run_dir} as a run folder: a file of that name exists", "choose another --run-id"
        ) from None
    except OSError as e:
        raise UsageError(
            f"cannot create the run folder {run_dir}: {e.strerror or e}",
            "choose a writable --runs-dir (or check the disk)",
        ) from None


def claim_new(run_dir: Path) -> None:
    """Refuse a folder that holds anything but the traces of a run stopped before its first
    event (then it is used again). Called with the lock held."""
    entries = {p.name for p in run_dir.iterdir()} - {LOCK_NAME}
    if not entries or never_started(run_dir):
        return
    raise UsageError(f"run folder {run_dir} already exists", "choose another --run-id, or resume it")


def never_started(run_dir: Path) -> bool:
    """True for a folder flowrun made (it holds one of the engine's files) whose log has no
    `run_start` yet: the process was stopped between making the folder and its first event,
    so no agent and no tool ran there."""
    names = {p.name for p in run_dir.iterdir()}
    if not names & (ENGINE_FILES | ENGINE_TEMPS):
        return False
    return not _has_run_start(run_dir / "events.jsonl")


def run_began(run_dir: Path) -> bool:
    """Whether a run began in the folder: its log holds the run's first event (`run_start`).
    False for a missing or empty folder and for one stopped before its first event."""
    return _has_run_start(run_dir / "events.jsonl")


def _has_run_start(log: Path) -> bool:
    """`run_start` is the first event of a run (after `run_resumed` on a resume): the first few
    lines tell."""
    try:
        f = open_regular(log, pin=False)  # (a FIFO there is not waited on)
    except OSError:
        return False
    with f:
        for line in itertools.islice(f, 3):
            with contextlib.suppress(ValueError, RecursionError):
                raw = json.loads(line)
                if isinstance(raw, dict) and raw.get("type") == "run_start":
                    return True
    return False


def unwritable(run_dir: Path, e: OSError) -> UsageError:
    """A run folder (or one of its engine files) that cannot be written when the run starts:
    nothing was recorded, the folder is as it was."""
    where = f" ({e.filename})" if e.filename else ""
    hint = "check the permissions of the run folder and its files, and the free space"
    if e.errno in (errno.EMFILE, errno.ENFILE):
        hint = "the process has too many files open: run fewer at once, or raise the limit (ulimit -n)"
    return UsageError(f"cannot write in the run folder {run_dir}: {e.strerror or e}{where}", hint)


def check_records(run_dir: Path) -> None:
    """RunError when one of the run's records (run.json, usage.json, events.jsonl, ...) is there
    but is not a file (a FIFO, a folder: made by hand, or by an agent's shell when the runs
    folder is inside its workdir): nothing reads or replaces it."""
    for name in sorted(ENGINE_FILES):
        try:
            mode = os.stat(run_dir / name).st_mode
        except OSError:
            continue  # missing (or unreadable: its reader says so)
        if not stat.S_ISREG(mode):
            kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a special file"
            raise not_a_record(run_dir / name, kind)


def not_a_record(path: Path, kind: str) -> RunError:
    """One of a run's records is not the file flowrun wrote (it is `kind`)."""
    return RunError(
        f"{path} is {kind}, not the record flowrun wrote",
        "the run folder was changed outside flowrun: move that entry away, or start a new run",
    )


def not_a_run_folder(run_dir: Path) -> RunError:
    return RunError(
        f"{run_dir} is not a run folder (no events.jsonl or run.json)",
        "pass a folder under runs/; a run stopped before it wrote anything is started again "
        "with the same --run-id",
    )


def settled_meta(run_dir: Path, meta: RunRecord) -> RunRecord:
    """run.json as the log says it ended. The process writes the `run_end` event, then
    usage.json and run.json: when it died in between, run.json still says `running`. Then the
    status (and usage) of the last `run_end` are written to run.json (and usage.json), so the
    run is what it reached and a resume does not start it again."""
    if meta.get("status") != "running":
        return meta
    end = _last_event(run_dir / "events.jsonl")
    if end is None or end.get("type") != "run_end" or not isinstance(end.get("status"), str):
        return meta
    settled: RunRecord = {**meta, "status": end["status"]}
    with contextlib.suppress(OSError):  # a folder that cannot be written: still the log's status
        if isinstance(end.get("usage"), dict):
            _write_json(run_dir / "usage.json", end["usage"])
        _write_json(run_dir / "run.json", settled)
    return settled


def _last_event(log: Path) -> dict[str, Any] | None:
    """The log's last whole line as an event, read from the end (a log can be large)."""
    try:
        with open_regular(log, pin=False) as f:
            end = f.seek(0, 2)
            start, tail = end, b""
            while start > 0 and tail.count(b"\n") < 2:
                start = max(0, start - 65536)
                f.seek(start)
                tail = f.read(end - start)
    except OSError:
        return None
    lines = tail.rstrip(b"\n").split(b"\n") if tail.endswith(b"\n") else []
    try:
        event = json.loads(lines[-1]) if lines else None
    except (ValueError, RecursionError):
        return None
    return event if isinstance(event, dict) else None


def _write_json(path: Path, value: Mapping[str, object]) -> None:
    replace_file(path, json.dumps(value, indent=2, default=str))
