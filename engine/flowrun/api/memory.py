"""An agent's memory outside a run, for `flowrun memory` and the HTTP API: where it is (the agent's
`memory:` in a project, manifest/memory.py), what it holds, and what a run found and did (its
run.json and `memory_*` events)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from flowrun.errors import UsageError
from flowrun.events import MemoryIndexEvent, MemoryWriteEvent, ToolResultEvent
from flowrun.manifest.memory import MemorySpec, memory_folder
from flowrun.manifest.project import Project, load_project
from flowrun.manifest.schema.check import did_you_mean
from flowrun.paths import is_file
from flowrun.pinned import read_json_object
from flowrun.runtime.durable.event_log import read_events
from flowrun.runtime.memory.service import caps_of
from flowrun.tools.memory.folder import Caps, MemoryFolder, Refused, file_sha256

MAX_SHOWN = 1 << 20  # a file's text is given up to this many bytes


@dataclass(frozen=True, slots=True)
class AgentMemory:
    agent: str
    name: str  # the memory's
    spec: MemorySpec
    folder: MemoryFolder


def agent_memory(
    where: Path, agent: str, run_dir: Path | None = None, memory_dir: Path | None = None
) -> AgentMemory:
    """The memory `agent` declares in the project of `where` (a workflow file or its folder);
    UsageError for an agent that is not there or declares none, or a `run` memory without a run."""
    root = where.parent if is_file(where) else where
    project = load_project(root)
    return memory_in(project, root, agent, run_dir, memory_dir)


def memory_in(
    project: Project, root: Path, agent: str, run_dir: Path | None = None, memory_dir: Path | None = None
) -> AgentMemory:
    loaded = project.agents.get(agent)
    if loaded is None:
        hint = (
            did_you_mean(agent, set(project.agents))
            or f"the agents of {root}: {', '.join(sorted(project.agents))}"
        )
        raise UsageError(f"no agent '{agent}' in {root}", hint)
    spec = loaded.spec.memory_config
    if spec is None:
        with_memory = sorted(n for n, a in project.agents.items() if a.spec.memory is not None)
        raise UsageError(
            f"agent '{agent}' declares no `memory:`",
            f"agents with a memory: {', '.join(with_memory)}"
            if with_memory
            else "add `memory: project` to it",
        )
    folder = memory_folder(spec, agent, root.resolve(), run_dir, memory_dir)
    if folder is None:
        raise UsageError(
            f"agent '{agent}' keeps a `run` memory: it lives in a run folder", "give the run: --run RUN_DIR"
        )
    return AgentMemory(agent, spec.owner(agent), spec, MemoryFolder(folder, caps_of(spec)))


def memory_files(folder: MemoryFolder, text: bool = True) -> list[dict[str, object]]:
    """Each memory file: its path (as the memory tool names it), size, sha256 and (with `text`)
    its text (None when it is not UTF-8 or over MAX_SHOWN bytes)."""
    out: list[dict[str, object]] = []
    for entry in folder.files():
        item: dict[str, object] = {"path": folder.virtual(entry.rel), "size": entry.size}
        with contextlib.suppress(OSError, Refused):
            item["sha256"] = file_sha256(folder.target(entry.rel))
        if text:
            try:
                item["text"] = folder.read_text(entry.rel, limit=MAX_SHOWN)
            except Refused:
                item["text"] = None
        out.append(item)
    return out


def memory_document(found: AgentMemory) -> dict[str, object]:
    """The memory as `flowrun memory export` writes it and the HTTP API serves it."""
    return {
        "agent": found.agent,
        "memory": found.name,
        "scope": found.spec.scope,
        "folder": str(found.folder.root),
        "files": memory_files(found.folder),
    }


def run_memory(run_dir: Path) -> dict[str, object]:
    """What a run found and did: each memory's state at its start with its files now, the index
    each agent instance's prompt got, and the writes it made (each with its call's outcome)."""
    started = read_json_object(run_dir / "run.json").get("memory")
    memories: dict[str, object] = {}
    for name, state in (started if isinstance(started, dict) else {}).items():
        if not isinstance(state, dict):
            continue
        where = state.get("copy") or state.get("folder")
        now = memory_files(MemoryFolder(Path(str(where)), Caps())) if where else []
        memories[str(name)] = {**state, "now": now}
    writes: list[dict[str, object]] = []
    indexes: list[dict[str, object]] = []
    outcome: dict[tuple[str, str], str] = {}
    for event in read_events(run_dir / "events.jsonl"):
        if isinstance(event, MemoryWriteEvent):
            writes.append({"seq": event.seq, "t": event.t, **event.to_dict()})
        elif isinstance(event, MemoryIndexEvent):
            indexes.append({"seq": event.seq, "t": event.t, **event.to_dict()})
        elif isinstance(event, ToolResultEvent) and event.tool == "memory":
            outcome[(event.agent_id, event.call_id)] = event.result.status
    for write in writes:
        write["status"] = outcome.get((str(write["agent_id"]), str(write["call_id"])), "unfinished")
    return {"memories": memories, "indexes": indexes, "writes": writes}
