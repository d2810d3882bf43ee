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
from flowrun.tools.memory.folder import index_state, measure_index


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
    path = _index_of(loaded, workflow_dir)
    measured = measure_index(path) if config is not None and path is not None else None
    if config is None or path is None or measured is None:
        return []
    lines, size = measured
    if lines <= config.index_lines and size <= config.index_bytes:
        return []
    name = loaded.spec.name
    message = (
        f"memory '{config.owner(name)}': {path} has {lines} lines ({size:,} bytes), over what a prompt "
        f"gets ({config.index_lines} lines, {config.index_bytes:,} bytes): the rest is left out"
    )
    hint = (
        f"keep MEMORY.md an index and move details into other files (`flowrun memory edit {name}`), or "
        "raise `index_lines` / `index_bytes`"
    )
    return [loaded.source.diag(("memory",), message, hint, "memory-index-cap", severity="warning")]


def _index_of(loaded: Loaded[AgentManifest], workflow_dir: Path) -> Path | None:
    """The MEMORY.md a prompt of the agent would get, when its folder is known outside a run."""
    config = loaded.spec.memory_config
    if config is None or not config.index:
        return None
    folder = memory_folder(config, loaded.spec.name, workflow_dir)
    return folder / INDEX if folder is not None else None


def index_probes(project: Project) -> list[tuple[str, str]]:
    """(where, state) of each MEMORY.md the warning above looks at: a cached check holds while
    each stays within its caps or over them (checks/checked.py), so a memory write does not make
    the next run check its manifests again unless it crosses a cap."""
    found: list[tuple[str, str]] = []
    for wf in project.workflows:
        for loaded in project.agents.values():
            config, path = loaded.spec.memory_config, _index_of(loaded, wf.source.path.parent)
            if config is not None and path is not None:
                where = f"{config.index_lines}:{config.index_bytes}:{path}"
                found.append((where, index_state(where)))
    return found
