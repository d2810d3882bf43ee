"""The items of a batch: a JSONL file (one JSON object per line), a JSON file (a list of
objects), or a CSV file (a header row, then one row per item), each item one set of the
workflow's inputs, a key or column per input.

Every item gets a stable id, the name of its run folder: its `id` key or column when it has one
(and the workflow has no input of that name), else a digest of its inputs, so appending,
reordering or inserting items never renames the others (repeated inputs get `-2`, `-3`, ...).
Every line is checked before anything runs: a mistake is reported as `file:line: message`."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from flowrun.errors import FlowrunError, UsageError
from flowrun.manifest.checks.csv_files import csv_lines
from flowrun.manifest.inputs import resolve_inputs
from flowrun.manifest.specs import InputSpec
from flowrun.types import decode_json

ID_KEY = "id"
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
MAX_PROBLEMS = 20


@dataclass(frozen=True, slots=True)
class Item:
    id: str
    line: int  # 1-based line of the items file
    inputs: dict[str, object]  # checked and converted against the workflow's declarations


def read_items(path: Path, declared: dict[str, InputSpec], workflow: str) -> list[Item]:
    """Every item of `path` (`.csv`, `.json`, else JSON lines), checked; UsageError lists the
    problems."""
    suffix = path.suffix.lower()
    try:
        rows = (
            _csv_rows(path)
            if suffix == ".csv"
            else _json_rows(path)
            if suffix == ".json"
            else _jsonl_rows(path)
        )
    except OSError as e:
        raise UsageError(f"cannot read the items file {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise UsageError(f"{path}: not UTF-8 text ({e.reason})", "save the items file as UTF-8") from None
    items: list[Item] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for line, row in rows:
        if isinstance(row, str):
            problems.append(f"{path}:{line}: {row}")
            continue
        try:
            items.append(_item(row, line, declared, workflow, seen))
        except FlowrunError as e:
            problems.append(f"{path}:{line}: {e.message}" + (f" ({e.hint})" if e.hint else ""))
    if problems:
        shown = "\n  ".join(problems[:MAX_PROBLEMS])
        more = f"\n  ... and {len(problems) - MAX_PROBLEMS} more" if len(problems) > MAX_PROBLEMS else ""
        raise UsageError(f"{len(problems)} problem(s) in the items, nothing was run:\n  {shown}{more}")
    if not items:
        hint = "one JSON object per line (.jsonl), a list of objects (.json), or a CSV header and rows"
        raise UsageError(f"{path} has no items", hint)
    return items


def _item(
    row: dict[str, object], line: int, declared: dict[str, InputSpec], workflow: str, seen: dict[str, int]
) -> Item:
    explicit = row.pop(ID_KEY, None) if ID_KEY not in declared else None
    inputs = resolve_inputs(declared, row, workflow)
    if explicit not in (None, ""):
        item_id = str(explicit)
        shown = repr(item_id if len(item_id) <= 60 else item_id[:60] + "...")
        if not ID_PATTERN.match(item_id):
            raise UsageError(
                f"item id {shown} cannot name a folder", "letters, digits, '.', '_' and '-', at most 100"
            )
        if item_id in seen:
            raise UsageError(f"item id {shown} repeats line {seen[item_id]}", "give each item its own id")
    else:
        base = (
            "item-"
            + hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()[:12]
        )
        item_id, n = base, 1
        while item_id in seen:
            n += 1
            item_id = f"{base}-{n}"
    seen[item_id] = line
    return Item(item_id, line, inputs)


def _jsonl_rows(path: Path) -> list[tuple[int, dict[str, object] | str]]:
    rows: list[tuple[int, dict[str, object] | str]] = []
    with path.open(encoding="utf-8-sig") as f:
        for number, text in enumerate(f, start=1):
            if not text.strip():
                continue
            try:
                value = decode_json(text)
            except json.JSONDecodeError as e:
                rows.append((number, f"not JSON: {e.msg} at column {e.colno}"))
                continue
            rows.append((number, value if isinstance(value, dict) else _not_an_object(value)))
    return rows


def _json_rows(path: Path) -> list[tuple[int, dict[str, object] | str]]:
    """A `.json` file: a list of objects (each at the line it starts on), or one object; a
    file of one object per line (JSON lines named .json) is read as such."""
    text = path.read_text(encoding="utf-8-sig")
    try:
        value = decode_json(text)
    except json.JSONDecodeError as e:
        if e.msg == "Extra data":  # one JSON value per line: JSON lines in a .json file
            return _jsonl_rows(path)
        return [(e.lineno, f"not JSON: {e.msg} at column {e.colno}")]
    if isinstance(value, dict):
        return [(_first_line(text), value)]
    if not isinstance(value, list):
        return [(_first_line(text), f"a .json items file holds a list of objects, got {_json_kind(value)}")]
    lines = _element_lines(text, len(value))
    return [
        (line, v if isinstance(v, dict) else _not_an_object(v)) for line, v in zip(lines, value, strict=True)
    ]


def _first_line(text: str) -> int:
    stripped = text.lstrip()
    return text.count("\n", 0, len(text) - len(stripped)) + 1


def _element_lines(text: str, count: int) -> list[int]:
    """The line each element of the top-level list in `text` starts on (the list parsed already)."""
    decoder = json.JSONDecoder()
    at = text.index("[") + 1
    lines = []
    for _ in range(count):
        while text[at] in " \t\r\n,":
            at += 1
        lines.append(text.count("\n", 0, at) + 1)
        _, at = decoder.raw_decode(text, at)
    return lines


def _not_an_object(value: object) -> str:
    return f"an item is a JSON object of inputs, got {_json_kind(value)}"


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _csv_rows(path: Path) -> list[tuple[int, dict[str, object] | str]]:
    rows: list[tuple[int, dict[str, object] | str]] = []
    with path.open(encoding="utf-8-sig", newline="") as f:
        lines = csv_lines(f)
        _, header = next(lines, (0, None))
        if header is None:
            return rows
        names = [h.strip() for h in header]
        if len(set(names)) != len(names) or "" in names:
            return [(1, "the header needs one distinct, non-empty name per column")]
        for line, cells in lines:
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(names):
                rows.append((line, f"{len(cells)} cells for {len(names)} columns"))
                continue
            # an empty cell is an input not given: its default applies
            rows.append((line, {n: c for n, c in zip(names, cells, strict=True) if c != ""}))
    return rows
