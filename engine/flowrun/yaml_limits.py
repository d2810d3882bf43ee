"""Bounds on what a YAML file may cost to load: its kind and size on disk, its nesting depth and
its node count with aliases expanded. Each is checked before the document is built: the file
here, the depth and count on the parser's event stream (yaml_scan.py: the parser is a state
machine, so even 100,000 levels of nesting cannot exhaust the stack), so a hostile file is
refused within milliseconds and a few MB of memory. PyYAML is not imported here: reading a
file's bytes needs none."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

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
