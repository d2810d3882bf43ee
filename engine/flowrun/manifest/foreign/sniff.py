"""Cheap looks at a file before it is parsed: its first bytes as text and its top-level keys,
so finding which format a path is (registry.detect) reads no YAML and imports nothing heavy
(`flowrun validate` of a folder asks it of every file)."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

HEAD_BYTES = 65_536
YAML_SUFFIXES = (".yaml", ".yml")
JSON_SUFFIXES = (".json", ".jsonc")
FLOWRUN_KINDS = ("workflow", "agent", "tool", "models", "script", "test", "evalset")
_TOP_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:", re.MULTILINE)
_JSON_KEY = re.compile(r'"([A-Za-z_][\w-]*)"\s*:')


def head(path: Path) -> str:
    """The first HEAD_BYTES of a regular file as text ('' when it cannot be read). Read once
    while the file is unchanged: `validate` of a folder asks every format about every file."""
    try:
        if not path.is_file():
            return ""
        stat = path.stat()
    except OSError:
        return ""
    return _head(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=512)
def _head(path: str, _mtime_ns: int, _size: int) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""


def foreign_yaml(path: Path) -> tuple[str, set[str]] | None:
    """A YAML file that is no flowrun manifest: its head and top-level keys (None otherwise)."""
    if not is_yaml(path):
        return None
    text = head(path)
    return None if is_flowrun_manifest(text) else (text, top_keys(text))


def top_keys(text: str) -> set[str]:
    """The keys written at the start of a line (a YAML file's top level)."""
    return set(_TOP_KEY.findall(text))


def json_keys(text: str) -> set[str]:
    """Every quoted key of a JSON text (at any depth)."""
    return set(_JSON_KEY.findall(text))


def json_top(text: str) -> tuple[set[str], object]:
    """A JSON object's top-level keys and its `model` (none when `text`, a file's head, is not
    a whole JSON object)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, cut at HEAD_BYTES, or nested past the parser
        return set(), None
    return (set(data), data.get("model")) if isinstance(data, dict) else (set(), None)


def top_value(text: str, key: str) -> str | None:
    """The scalar written after `key:` at the start of a line, unquoted."""
    found = re.search(rf"^{re.escape(key)}\s*:\s*['\"]?([^'\"#\n]*?)['\"]?\s*(#.*)?$", text, re.MULTILINE)
    return found.group(1).strip() if found else None


def is_flowrun_manifest(text: str) -> bool:
    """A flowrun manifest says `kind: workflow` (or another of its kinds) at its top level."""
    return top_value(text, "kind") in FLOWRUN_KINDS


def is_yaml(path: Path) -> bool:
    return path.suffix in YAML_SUFFIXES


def is_json(path: Path) -> bool:
    return path.suffix in JSON_SUFFIXES
