"""What templates see as `workspace`: the run folder, with read-only helpers confined to it."""

from __future__ import annotations

import json
from pathlib import Path

from flowrun.pinned import read_checked
from flowrun.types import decode_json

MAX_READ_BYTES = 10_000_000  # what a template reads of one file (a sparse 100 GB file is not read)


class WorkspaceView:
    def __init__(self, root: Path, *, real: bool = False) -> None:
        """`real`: `root` is already without symlinks (the run's workspace: Run resolved it)."""
        self._root = root if real else root.resolve()

    def __str__(self) -> str:
        return str(self._root)

    def _path(self, relative: str) -> Path | None:
        path = (self._root / relative).resolve()
        return path if path.is_relative_to(self._root) else None

    def exists(self, relative: str) -> bool:
        path = self._path(relative)
        return bool(path and path.exists())

    def read(self, relative: str, default: str = "") -> str:
        """The file's text; `default` when it is missing, not a regular file, over MAX_READ_BYTES,
        or changed while being opened (a folder swapped for a symlink: flowrun/pinned.py). It is
        read on the event loop, so a FIFO a tool left is never waited on."""
        path = self._path(relative)
        if path is None:
            return default
        try:
            return read_checked(path, MAX_READ_BYTES).decode("utf-8", errors="replace")
        except OSError:
            return default

    def json(self, relative: str, default: object = None) -> object:
        """Parsed JSON of a workspace file; `default` (an empty dict unless given) when the
        file is missing or not valid JSON, so `until` conditions can test fields safely."""
        text = self.read(relative)
        try:
            return decode_json(text) if text else (default if default is not None else {})
        except json.JSONDecodeError:
            return default if default is not None else {}
