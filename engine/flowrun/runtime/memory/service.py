"""The memories of one run, a run service beside the memory tool (runtime/tool_kinds/memory.py):
which folder each memory the run's agents declare is (manifest/memory.py), a dry run's copy of
it, each memory's state when the run starts (a `memory_state` event, and run.json's `memory`),
and the memory block each agent instance's prompt gets (a `memory_index` event; a resume and a
replay give the instance the recorded one). Kept per run, as the kinds keep theirs."""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from dataclasses import dataclass, field, replace
from pathlib import Path

from flowrun.events import MemoryIndexEvent, MemoryStateEvent
from flowrun.manifest.graph import run_agents
from flowrun.manifest.memory import INDEX, MemorySpec, memory_folder
from flowrun.manifest.specs import AgentManifest
from flowrun.runtime.loop.contracts import AgentInstance, RunServices
from flowrun.runtime.memory.note import Index, cut_index, memory_block
from flowrun.runtime.memory.record import RecordedMemory
from flowrun.tools.memory.folder import Caps, MemoryFolder, Refused, copy_files, line_count, sha256

MAX_INDEX_READ = 4 << 20  # MEMORY.md is read up to this much to show its first lines


@dataclass
class Memory:
    """One memory as this run uses it."""

    name: str
    spec: MemorySpec  # as the agent that owns it declares it
    folder: MemoryFolder  # where this run reads and writes it (a dry run's copy)
    home: Path | None  # its own folder (None: a `run` memory without a run folder)
    copied: bool = False


def caps_of(spec: MemorySpec) -> Caps:
    return Caps(spec.max_file_bytes, spec.max_bytes)


@dataclass
class RunMemory:
    run: RunServices
    opened: dict[str, Memory] = field(default_factory=dict)  # by memory name
    states: dict[str, MemoryStateEvent] = field(default_factory=dict)  # at the start, by memory name
    notes: dict[str, str] = field(default_factory=dict)  # each instance's memory block
    targets: dict[str, str] = field(default_factory=dict)  # a reflection's instance id -> the agent it serves
    seen: dict[str, dict[str, AgentInstance]] = field(default_factory=dict)  # agent -> its instances by id

    @property
    def record(self) -> RecordedMemory:
        return self.run.recorded(RecordedMemory)

    def config(self, agent: str) -> MemorySpec | None:
        loaded = self.run.project.agents.get(agent)
        return loaded.spec.memory_config if loaded is not None else None

    def owner(self, agent: str, agent_id: str) -> str:
        """The agent whose memory an instance uses: its own, or the one a reflection serves."""
        return self.targets.get(agent_id, agent)

    def writable(self, agent: str, agent_id: str) -> bool:
        config = self.config(self.owner(agent, agent_id))
        if config is None or config.writes == "none":
            return False
        return agent_id in self.targets or config.writes == "agent"

    def memory(self, agent: str) -> Memory:
        """The memory `agent` declares, opened (a dry run's copy made) the first time."""
        config = self.config(agent)
        if config is None:
            raise Refused("UNAVAILABLE", f"agent '{agent}' declares no `memory:`")
        name = config.owner(agent)
        found = self.opened.get(name)
        if found is None:
            found = self.opened[name] = self._open(name, config, agent)
        return found

    def _open(self, name: str, config: MemorySpec, agent: str) -> Memory:
        run, record = self.run, self.record
        run_dir = run.run_dir.absolute()
        home = memory_folder(config, agent, run.workflow_dir, run_dir, run.options.memory_dir)
        # a dry run and a replay never change a memory of the user's: they work on one in the run folder
        apart = config.scope != "run" and (run.options.dry_run or record.replaying)
        where = run_dir / "memory" / name if apart or home is None else home
        memory = Memory(name, config, MemoryFolder(where, caps_of(config)), home)
        fresh_copy = (run.options.dry_run and record.ledger is None) or (record.replaying and record.current)
        if apart and fresh_copy and home is not None:
            copy_files(MemoryFolder(home, Caps(1 << 30, 1 << 40)), memory.folder)
            memory.copied = True
        return memory

    async def start(self) -> None:
        """A new run: each memory its agents declare is opened and its state recorded. A resume
        or a replay keeps the recorded states."""
        if self.record.ledger is not None:
            return
        for agent in sorted(run_agents(self.run.spec, self.run.project)):
            config = self.config(agent)
            if config is None or config.owner(agent) in self.states:
                continue
            memory = await asyncio.to_thread(self.memory, agent)
            files = await asyncio.to_thread(memory.folder.state)
            apart = memory.home is not None and memory.folder.root != memory.home
            event = MemoryStateEvent(
                memory=memory.name,
                scope=config.scope,
                folder=str(memory.home or memory.folder.root),
                files=files,
                copy=str(memory.folder.root) if apart else None,
            )
            self.states[memory.name] = event
            self.run.emit(event)

    def run_record(self) -> dict[str, object]:
        """run.json's `memory`: each memory's state when the run started."""
        states = self.states or self.record.states
        return {
            name: {k: v for k, v in state.to_dict().items() if k not in ("type", "memory") and v is not None}
            for name, state in sorted(states.items())
        }

    def seen_instance(self, inst: AgentInstance) -> None:
        """An instance of an agent with memory asked its model (the reflection reads them)."""
        if inst.id not in self.targets and self.config(inst.name) is not None:
            self.seen.setdefault(inst.name, {})[inst.id] = inst

    # ------------------------------------------------------------ the prompt's block

    def note(self, spec: AgentManifest, agent_id: str) -> str:
        """The memory block of instance `agent_id`'s prompt ("" without one), the same for the
        instance every time its prompt is made."""
        found = self.notes.get(agent_id)
        if found is not None:
            return found
        owner = self.owner(spec.name, agent_id)
        config = self.config(owner)
        if config is None or not config.index:
            return ""
        index = self._index(owner, config, spec.name, agent_id)
        found = (
            ""
            if index is None
            else memory_block(
                config.owner(owner), index, self.writable(spec.name, agent_id), config.index_lines
            )
        )
        self.notes[agent_id] = found
        return found

    def _index(self, owner: str, config: MemorySpec, agent: str, agent_id: str) -> Index | None:
        """The index as the instance gets it: recorded (a resume, a replay), else read now."""
        record = self.record
        if record.recorded:
            event = record.indexes.get(agent_id)
            if event is not None:
                if record.replaying:  # (the replay's own log says what its prompts got too)
                    self.run.emit(replace(event, seq=0, t=0.0))
                return Index(event.text, event.lines, event.cut, event.sha256 is not None)
            if record.replaying:
                return None  # the recording gave this instance no memory block
        memory = self.memory(owner)
        raw: bytes | None = None
        with contextlib.suppress(Refused):
            raw = memory.folder.read_bytes(INDEX, limit=MAX_INDEX_READ)
        text = raw.decode("utf-8", "replace") if raw is not None else ""
        shown, cut = cut_index(text, config.index_lines, config.index_bytes)
        shown = self.run.redactor.text(shown)
        lines = line_count(text)
        index = Index(shown, lines, cut, raw is not None)
        self.run.emit(
            MemoryIndexEvent(
                memory=memory.name,
                agent=agent,
                agent_id=agent_id,
                text=shown,
                lines=lines,
                cut=cut,
                sha256=sha256(raw) if raw is not None else None,
            )
        )
        return index


_MEMORIES: weakref.WeakKeyDictionary[RunServices, RunMemory] = weakref.WeakKeyDictionary()


def memory_of(run: RunServices) -> RunMemory:
    found = _MEMORIES.get(run)
    if found is None:
        found = _MEMORIES[run] = RunMemory(run)
    return found


def memory_in_use(run: RunServices, inst: AgentInstance) -> bool:
    """Whether an instance has a memory: its agent declares one, or it is a reflection."""
    found = _MEMORIES.get(run)
    return inst.spec.memory is not None or (found is not None and inst.id in found.targets)


def memory_note(spec: AgentManifest, agent_id: str, run: RunServices) -> str:
    """What an agent instance's system prompt ends with for its memory ("" for none)."""
    found = _MEMORIES.get(run)
    if spec.memory is None and (found is None or agent_id not in found.targets):
        return ""
    block = memory_of(run).note(spec, agent_id)
    return f"\n\n{block}" if block else ""
