"""Bounds on what a YAML file may cost to load: its kind and size on disk, its nesting depth and
its node count with aliases expanded. Each is checked before the document is built, on the
parser's event stream (the parser is a state machine, so even 100,000 levels of nesting cannot
exhaust the stack), so a hostile file is refused within milliseconds and a few MB of memory."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import yaml

Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MAX_FILE_BYTES = 1_000_000  # a manifest is a few KB; a long script file a few hundred
MAX_DEPTH = 50  # nested mappings and lists
MAX_NODES = 20_000  # keys, values and items, each alias counted as the nodes it repeats


@dataclass(slots=True)
class Refusal:
    """Why a file is not loaded, and where (1-based)."""

    message: str
    hint: str
    code: str = "too-large"
    line: int = 1
    column: int = 1


def read_limited(path: Path, limit: int = MAX_FILE_BYTES) -> str | Refusal:
    """The text of a regular UTF-8 file of at most `limit` bytes. A FIFO, a device or a folder
    is refused without being opened for a blocking read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        try:  # a socket cannot be opened at all: say what it is
            mode = os.stat(path).st_mode
        except OSError:
            mode = stat.S_IFREG
        if not stat.S_ISREG(mode):
            return Refusal(f"not a regular file ({_file_type(mode)})", "pass a .yaml file", "not-a-file")
        return Refusal(f"cannot read file: {e.strerror or e}", "check the path", "io")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return Refusal(
                f"not a regular file ({_file_type(info.st_mode)})", "pass a .yaml file", "not-a-file"
            )
        if info.st_size > limit:
            return Refusal(
                f"the file is {info.st_size:,} bytes; manifests may be at most {limit:,}",
                "split it, or move long text into a prompt file",
            )
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    except OSError as e:
        return Refusal(f"cannot read file: {e.strerror or e}", "check the path", "io")
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew after the check
        return Refusal(f"the file is larger than {limit:,} bytes", "split it")
    return decode_utf8(data)


def decode_utf8(data: bytes) -> str | Refusal:
    """UTF-8 text, or a refusal naming the line and column of the first undecodable byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        before = data[: e.start]
        line = before.count(b"\n") + 1
        column = e.start - (before.rfind(b"\n") + 1) + 1
        return Refusal(
            f"not UTF-8 text: byte 0x{data[e.start]:02x} cannot be decoded ({e.reason})",
            "save the file as UTF-8",
            "io",
            line,
            column,
        )


def _file_type(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "a special file"


def _refuse(event: yaml.Event, message: str, hint: str, code: str = "too-large") -> Refusal:
    mark = event.start_mark
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    return Refusal(message, hint, code, line, column)


@dataclass(slots=True)
class _Open:
    """A mapping or list whose end has not been seen yet."""

    size: int
    anchor: str | None


class _Budget:
    """The running count of nodes as the composed data would hold them (aliases expanded)."""

    def __init__(self) -> None:
        self.total = 0
        self.anchors: dict[str, int] = {}  # anchor -> expanded size, once its node is complete
        self.open: list[_Open] = []

    def add(self, size: int, anchor: str | None) -> None:
        if anchor:
            self.anchors[anchor] = size
        if self.open:
            self.open[-1].size += size


def scan_events(text: str) -> Refusal | None:
    """Walk the parser's events once and refuse the document at the first limit it crosses.
    YAML syntax errors are left to the composer, which reports them with their position."""
    budget = _Budget()
    try:
        for event in yaml.parse(text, Loader=Loader):
            refusal = _step(budget, event)
            if refusal is not None:
                return refusal
    except yaml.YAMLError:
        return None
    return None


def _step(budget: _Budget, event: yaml.Event) -> Refusal | None:
    if isinstance(event, yaml.DocumentStartEvent):
        budget.anchors.clear()
        return None
    if isinstance(event, yaml.CollectionStartEvent):
        budget.open.append(_Open(1, event.anchor))
        budget.total += 1
        if len(budget.open) > MAX_DEPTH:
            return _refuse(event, f"nesting deeper than {MAX_DEPTH} levels", "flatten the structure")
    elif isinstance(event, yaml.CollectionEndEvent):
        done = budget.open.pop()
        budget.add(done.size, done.anchor)
    elif isinstance(event, yaml.ScalarEvent):
        budget.total += 1
        budget.add(1, event.anchor)
    elif isinstance(event, yaml.AliasEvent):
        size = budget.anchors.get(str(event.anchor))
        if size is None:
            recursive = any(entry.anchor == event.anchor for entry in budget.open)
            what = "refers to a node that contains it" if recursive else "has no anchor defined before it"
            return _refuse(event, f"alias *{event.anchor} {what}", "define `&name` before `*name`", "alias")
        budget.total += size
        budget.add(size, None)
    if budget.total > MAX_NODES:
        return _refuse(
            event,
            f"more than {MAX_NODES:,} values once aliases are expanded",
            "a manifest this large is a mistake (or an alias bomb): write it out plainly",
        )
    return None
