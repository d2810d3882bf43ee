"""What an agent's system prompt gets after its own prompt: the project instructions it reads
(`instructions: project`: the AGENTS.md or CLAUDE.md of the workflow's folder, read by
manifest/ecosystem/project_instructions.py), then, when a tool of its can bring it text from
outside the workflow (framed as data: flowrun/foreign_text.py), the line that says once what
such blocks are.

The instructions are read once per run and flavor, when the first agent that reads them starts,
and recorded (`project_instructions`): a resume and a replay give the agents the recorded text,
never the files as they are now, so an AGENTS.md edited since changes neither. A replay that
reads instructions the recording never did (an agent switched to `instructions: project`) reads
the files, and `replay --diff` names them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol, TypeVar

from flowrun.events import Event, ProjectInstructionsEvent
from flowrun.foreign_text import NOTE
from flowrun.manifest.ecosystem.project_instructions import (
    MAX_BYTES,
    Flavor,
    Mode,
    flavor_of,
    mode_of,
    read_instructions,
)
from flowrun.manifest.project import Loaded
from flowrun.manifest.specs import AgentManifest
from flowrun.runtime.durable.ledger import KindRecord, Ledger
from flowrun.runtime.loop.contracts import BoundTool
from flowrun.runtime.loop.prompt_version import FRAMING, RecordedPrompts

R = TypeVar("R", bound=KindRecord)


class Recorded(Protocol):
    """The run's `recorded`: a kind's record of the recording (an empty one for a new run)."""

    def __call__(self, record: type[R]) -> R: ...


class RecordedInstructions(KindRecord):
    """The project instructions the recording's agents read, by flavor."""

    reads = (ProjectInstructionsEvent,)

    def __init__(self, ledger: Ledger | None = None) -> None:
        super().__init__(ledger)
        self.found: dict[str, ProjectInstructionsEvent] = {}

    def add(self, event: Event) -> None:
        if isinstance(event, ProjectInstructionsEvent):
            self.found.setdefault(event.flavor, event)


class PromptEndings:
    """One run's endings of system prompts: its project instructions, read (or taken from the
    recording) once per flavor, and the foreign-text note."""

    def __init__(
        self, root: Path, default: Mode | None, recorded: Recorded, emit: Callable[[Event], None]
    ) -> None:
        self.root = root  # the workflow's folder (resolved)
        self.default: Mode | None = default  # the workflow's `instructions`
        self.recorded = recorded(RecordedInstructions)
        # a run recorded before flowrun framed foreign text goes on without it (prompt_version.py)
        self.framing = recorded(RecordedPrompts).version >= FRAMING
        self.emit = emit
        self.blocks: dict[Flavor, str] = {}

    def instructions(self, loaded: Loaded[AgentManifest]) -> str:
        """The instructions block this agent's prompt ends with ("" when it reads none)."""
        flavor = flavor_of(loaded.source.path)
        if mode_of(loaded.spec.instructions, self.default, flavor) != "project":
            return ""
        if flavor not in self.blocks:
            self.blocks[flavor] = self._block(flavor)
        return self.blocks[flavor]

    def _block(self, flavor: Flavor) -> str:
        kept = self.recorded.found.get(flavor)
        if kept is not None:
            return kept.text
        found = read_instructions(self.root, flavor)
        if found is None:
            return ""
        cut = found.cut_at is not None
        self.emit(
            ProjectInstructionsEvent(
                flavor=flavor, files=found.files, text=found.block, size=found.size, cap=MAX_BYTES, cut=cut
            )
        )
        return found.block

    def complete(self, prompt: str, loaded: Loaded[AgentManifest], tools: Mapping[str, BoundTool]) -> str:
        """`prompt` with the agent's instructions and, when it can read foreign text, the note."""
        if not self.framing:
            return prompt
        parts = [prompt, self.instructions(loaded)]
        if any(bound.foreign_text for bound in tools.values()):
            parts.append(NOTE)
        return "\n\n".join(part for part in parts if part)
