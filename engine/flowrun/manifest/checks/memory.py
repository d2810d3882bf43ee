"""What `validate` checks of an agent's `memory:` beyond its schema: the reflect agent exists, a
read-only memory is not reflected into, agents that share a memory declare it alike, and (per
workflow, where the memory's folder is known) that its MEMORY.md fits the caps its prompt takes."""

from __future__ import annotations

from pathlib import Path

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.memory import INDEX, MemorySpec, memory_folder
from flowrun.manifest.project import Loaded, Project
from flowrun.manifest.schema.check import did_you_mean
from flowrun.manifest.specs import AgentManifest
from flowrun.pinned import open_regular

MAX_READ = 4 << 20  # an index is read this far to count its lines


def check_memory(loaded: Loaded[AgentManifest], project: Project) -> list[Diagnostic]:
    spec, src = loaded.spec, loaded.source
    config = spec.memory_config
    if config is None:
        return []
    out: list[Diagnostic] = []
    if isinstance(config.reflect, str) and config.reflect not in project.agents:
        hint = did_you_mean(config.reflect, set(project.agents)) or f"add agents.d/{config.reflect}.yaml"
        out.append(
            src.diag(
                _at(loaded, "reflect"), f"unknown reflect agent '{config.reflect}'", hint, "unknown-agent"
            )
        )
    if config.writes == "none" and config.reflect:
        message = "a read-only memory (`writes: none`) has no reflection to write it"
        out.append(
            src.diag(
                _at(loaded, "reflect"),
                message,
                "drop `reflect`, or let it write: `writes: reflect`",
                "memory-read-only",
            )
        )
    out += _shared(loaded, config, project)
    return out


def _at(loaded: Loaded[AgentManifest], key: str) -> tuple[str, ...]:
    return ("memory", key) if isinstance(loaded.spec.memory, MemorySpec) else ("memory",)


def _shared(loaded: Loaded[AgentManifest], config: MemorySpec, project: Project) -> list[Diagnostic]:
    """Another agent (first in name order) that names the same memory with another scope or folders."""
    name = config.owner(loaded.spec.name)
    for other, found in sorted(project.agents.items()):
        theirs = found.spec.memory_config
        if other == loaded.spec.name or theirs is None or theirs.owner(other) != name:
            continue
        if (theirs.scope, theirs.folders) != (config.scope, config.folders) and other < loaded.spec.name:
            message = (
                f"memory '{name}' is declared with scope {config.scope} here and {theirs.scope} "
                f"({theirs.folders}) by agent '{other}'"
            )
            hint = "agents that share a memory declare the same scope and folders; or name the memories apart"
            return [loaded.source.diag(_at(loaded, "scope"), message, hint, "memory-mismatch")]
    return []


def index_over_cap(loaded: Loaded[AgentManifest], workflow_dir: Path) -> list[Diagnostic]:
    """A warning when the memory's MEMORY.md (as it is now) is longer than its prompt takes."""
    config = loaded.spec.memory_config
    if config is None or not config.index:
        return []
    folder = memory_folder(config, loaded.spec.name, workflow_dir)
    if folder is None:
        return []
    path = folder / INDEX
    try:
        with open_regular(path, pin=False) as f:  # (never waits on a FIFO left there)
            raw = f.read(MAX_READ)
    except OSError:
        return []
    text = raw.decode("utf-8", "replace")
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if lines <= config.index_lines and len(raw) <= config.index_bytes:
        return []
    name = loaded.spec.name
    message = (
        f"memory '{config.owner(name)}': {path} has {lines} lines ({len(raw):,} bytes), over what a prompt "
        f"gets ({config.index_lines} lines, {config.index_bytes:,} bytes): the rest is left out"
    )
    hint = (
        f"keep MEMORY.md an index and move details into other files (`flowrun memory edit {name}`), or "
        "raise `index_lines` / `index_bytes`"
    )
    return [loaded.source.diag(("memory",), message, hint, "memory-index-cap", severity="warning")]
