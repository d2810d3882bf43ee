"""What templates see as `workspace`: the run folder, with read-only helpers confined to it."""

from __future__ import annotations

import json
from pathlib import Path

from flowrun.types import decode_json


class WorkspaceView:
    def __init__(self, root: Path) -> None:
        self._root = root.resolve()

    def __str__(self) -> str:
        return str(self._root)

    def _path(self, relative: str) -> Path | None:
        path = (self._root / relative).resolve()
        return path if path.is_relative_to(self._root) else None

    def exists(self, relative: str) -> bool:
        path = self._path(relative)
        return bool(path and path.exists())

    def read(self, relative: str, default: str = "") -> str:
        path = self._path(relative)
        if path is None or not path.is_file():
            return default
        return path.read_text(encoding="utf-8", errors="replace")

    def json(self, relative: str, default: object = None) -> object:
        """Parsed JSON of a workspace file; `default` (an empty dict unless given) when the
        file is missing or not valid JSON, so `until` conditions can test fields safely."""
        text = self.read(relative)
        try:
            return decode_json(text) if text else (default if default is not None else {})
        except json.JSONDecodeError:
            return default if default is not None else {}
