"""The foreign formats flowrun reads, one module each, and how a path is matched to one. A new
format is its module (with `FORMAT`, a `ForeignFormat`) plus one line in FORMATS.

Finding the format of a path reads at most the first bytes of a few files (sniff.py) and
imports only the format modules, which import their converters when asked to convert."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from flowrun.manifest.foreign.conversion import Conversion

# name (what `--format` takes) -> module; detection asks them in this order
FORMATS: dict[str, str] = {
    "agentspec": "flowrun.manifest.foreign.agentspec.format",
    "docker-agent": "flowrun.manifest.foreign.docker_agent.format",
    "adk": "flowrun.manifest.foreign.adk.format",
    "crewai": "flowrun.manifest.foreign.crewai.format",
    "pydantic-ai": "flowrun.manifest.foreign.pydantic_ai",
    "maf": "flowrun.manifest.foreign.maf",
}


@dataclass(frozen=True, slots=True)
class Detected:
    """A foreign project: its format, the file that stands for it (a run's workflow path) and
    the folder it lives in."""

    format: str
    entry: Path
    root: Path


class ForeignFormat(Protocol):
    name: str  # as FORMATS spells it
    title: str  # as people call it, e.g. "CrewAI"

    def detect(self, path: Path) -> Detected | None:
        """`path` (a file or a folder) as a project of this format, or None; cheap: it looks
        at names and at most the first bytes of a few files."""
        ...

    def parts(self, folder: Path) -> set[Path]:
        """Files of `folder` that belong to a project detected there (a sub-agent's file, a
        task list): never projects of their own."""
        return set()

    def convert(self, found: Detected) -> Conversion:
        """The project read into flowrun manifests, with notes and problems."""
        ...


def format_named(name: str) -> ForeignFormat:
    module = importlib.import_module(FORMATS[name])
    found: ForeignFormat = module.FORMAT
    return found


def formats() -> Iterator[ForeignFormat]:
    for name in FORMATS:
        yield format_named(name)


def detect(path: Path, only: str | None = None) -> Detected | None:
    """The foreign project `path` is (a file or a folder), of format `only` when given; None for
    a flowrun manifest."""
    from flowrun.manifest.foreign import sniff

    if path.is_file() and sniff.is_flowrun_manifest(sniff.head(path)):
        return None
    for fmt in formats():
        if only is None or fmt.name == only:
            found = fmt.detect(path)
            if found is not None:
                return found
    return None


def detect_in(folder: Path) -> list[Detected]:
    """The foreign projects of one folder (not its subfolders): the folder itself, then each of
    its files that is not part of a project found there."""
    found: list[Detected] = []
    whole = detect(folder)
    if whole is not None:
        found.append(whole)
    taken = {p.resolve() for fmt in formats() for p in fmt.parts(folder)}
    taken |= {d.entry.resolve() for d in found}
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.resolve() not in taken:
            one = detect(path)
            if one is not None and one.entry.resolve() not in taken:
                found.append(one)
                taken.add(one.entry.resolve())
    return found


def convert(found: Detected) -> Conversion:
    return format_named(found.format).convert(found)
