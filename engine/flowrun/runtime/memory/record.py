"""What a recorded run keeps of its memories, for `resume` and `replay` (a KindRecord of the memory
tool kind): each memory's state when it started, the index each agent instance's prompt got, and
each write with its digests. A resume and a replay give an instance the recorded index, so the
prompts are the ones recorded whatever the folder holds now; a resume finds a write a kill
interrupted by its call."""

from __future__ import annotations

from flowrun.events import Event, MemoryIndexEvent, MemoryStateEvent, MemoryWriteEvent
from flowrun.runtime.durable.ledger import KindRecord, Ledger


class RecordedMemory(KindRecord):
    reads = (MemoryStateEvent, MemoryIndexEvent, MemoryWriteEvent)

    def __init__(self, ledger: Ledger | None = None) -> None:
        super().__init__(ledger)
        self.states: dict[str, MemoryStateEvent] = {}  # by memory name
        self.indexes: dict[str, MemoryIndexEvent] = {}  # by agent instance id
        self.writes: dict[tuple[str, str], MemoryWriteEvent] = {}  # by (agent id, call id)
        # a replay that reads the memory as it is now (a copy) instead of as recorded: what
        # `replay --diff --memory current` asks, to see what a memory change does to the run
        self.current = False

    def add(self, event: Event) -> None:
        if isinstance(event, MemoryStateEvent):
            self.states.setdefault(event.memory, event)
        elif isinstance(event, MemoryIndexEvent):
            self.indexes.setdefault(event.agent_id, event)
        elif isinstance(event, MemoryWriteEvent):
            self.writes[(event.agent_id, event.call_id)] = event

    @property
    def recorded(self) -> bool:
        """A resume or a replay (as recorded): the memory the run saw is in the log."""
        return self.ledger is not None and not (self.replaying and self.current)

    @property
    def resuming(self) -> bool:
        return self.ledger is not None and self.ledger.mode == "resume"
