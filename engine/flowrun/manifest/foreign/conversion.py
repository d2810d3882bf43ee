"""What reading a foreign project gives: flowrun manifests as data (a workflow, its agents and
tools), each with the foreign file it came from and, for every key, where in that file it was
written; the notes of what each source key became, was approximated as or dropped; and the
problems, at the foreign file's line and column.

Running a foreign file in place checks these pieces like any manifest (manifest/project.py);
`flowrun import` writes them as files (write.py). A piece's `source` is the foreign file's
positions with `remap` from the flowrun key to the foreign one, so a diagnostic about
`tools[2]` of a converted agent points at the line where the foreign file named that tool."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeAlias

from flowrun.manifest.diagnostics import Diagnostic, yaml_path
from flowrun.manifest.yaml_source import PathKey, Source

NAME_LIMIT = 64  # flowrun's names (spec_base.NAME)

# What a format's file holds and what a conversion writes: YAML or JSON read as plain Python,
# values of any JSON type (each reader checks the type it needs where it reads it).
Value: TypeAlias = Any  # one value of such a file, of any JSON type
Doc = dict[str, Value]
Items = list[Value]
Map = Mapping[str, Value]


def flowrun_name(key: str) -> str:
    """A foreign id as a flowrun name: letters, digits, _ and -, starting with a letter."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", key.strip()).strip("_") or "unnamed"
    if not name[0].isalpha():
        name = "a" + name
    return name[:NAME_LIMIT]


@cache
def builtin_tool_names() -> frozenset[str]:
    from flowrun.paths import builtin_root

    return frozenset(p.stem for p in (builtin_root() / "tools.d").glob("*.yaml"))


def agent_name(key: str) -> str:
    """A foreign agent's id as a flowrun agent name that no built-in tool has (an agent named
    `web_search` would be taken for the tool where another agent lists it)."""
    name = flowrun_name(key)
    return f"{name[: NAME_LIMIT - 6]}_agent" if name in builtin_tool_names() else name


How = Literal["mapped", "approximated", "dropped"]
PieceKind = Literal["workflow", "agent", "tool"]


@dataclass(slots=True)
class Note:
    """What one source key became."""

    file: str
    line: int
    key: str  # the key as the source file spells it, e.g. `tasks[1].context`
    became: str
    how: How = "mapped"

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(slots=True)
class Piece:
    """One flowrun manifest made from foreign files."""

    kind: PieceKind
    name: str
    data: Doc
    source: Source  # the foreign file's positions, `remap` from flowrun keys to its keys
    root: Path  # the project folder it belongs to (where Python tool modules are found)
    base: PathKey = ()  # where in the foreign file it is defined


@dataclass
class Conversion:
    """A foreign project read into flowrun manifests."""

    format: str
    entry: Path
    root: Path
    pieces: list[Piece] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)  # every foreign file read

    @property
    def workflow(self) -> Piece | None:
        return next((p for p in self.pieces if p.kind == "workflow"), None)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    def named(self, kind: PieceKind) -> dict[str, Piece]:
        return {p.name: p for p in self.pieces if p.kind == kind}

    def add(
        self,
        kind: PieceKind,
        data: Doc,
        src: Source,
        base: PathKey = (),
        where: dict[PathKey, PathKey] | None = None,
        root: Path | None = None,
    ) -> Piece:
        """A manifest from `src`, its keys found in `src` at `where` (flowrun path -> foreign
        path), any other top-level key at `base`. A later piece of the same kind and name
        replaces the earlier one."""
        remap = dict(where or {})
        for key in data:
            remap.setdefault((key,), base)
        name = str(data.get("name", kind))
        self.pieces = [p for p in self.pieces if (p.kind, p.name) != (kind, name)]
        piece = Piece(
            kind, name, data, dataclasses.replace(src, data=data, remap=remap), root or self.root, base
        )
        self.pieces.append(piece)
        return piece

    def note(self, src: Source, path: PathKey, became: str, how: How = "mapped") -> None:
        line, _ = src.position(path, key=True)
        self.notes.append(Note(src.display, line, yaml_path(path) or "(the file)", became, how))

    def problem(
        self,
        src: Source,
        path: PathKey,
        message: str,
        hint: str = "",
        code: str = "invalid",
        *,
        severity: Literal["error", "warning"] = "error",
        key: bool = False,
    ) -> None:
        self.diagnostics.append(src.diag(path, message, hint, code, key=key, severity=severity))

    def read(self, path: Path) -> None:
        """`path` was read to make this conversion."""
        if path not in self.files:
            self.files.append(path)
