"""The version of flowrun's own words around what models read, recorded with each run (`run_start`'s
`prompts`): a resume and a replay keep the recorded one, so a run recorded before a change to
them goes on, and replays, as it was recorded (its cassettes stay green).

1: written before the version was recorded. 2: text from outside the workflow is framed as data
(flowrun/foreign_text.py: a sub-agent's answer, MCP and A2A tool descriptions, and the note in
the system prompt) and agents read the project instructions (runtime/loop/instructions.py). A
tool's own results are framed by the tool whatever the version: a recorded result is given back
as it was recorded, so only calls a resumed run makes anew are framed in an older run."""

from __future__ import annotations

from flowrun.events import Event, RunStartEvent
from flowrun.runtime.durable.ledger import KindRecord, Ledger
from flowrun.runtime.loop.contracts import RunServices

CURRENT = 2
FRAMING = 2  # the first version that frames foreign text and reads project instructions


class RecordedPrompts(KindRecord):
    """The version the recording's `run_start` says (1 when it says none)."""

    reads = (RunStartEvent,)

    def __init__(self, ledger: Ledger | None = None) -> None:
        super().__init__(ledger)
        self.found: int | None = None

    def add(self, event: Event) -> None:
        if isinstance(event, RunStartEvent) and self.found is None:
            self.found = event.prompts or 1

    @property
    def version(self) -> int:
        """The run's version: the recorded one, CURRENT for a new run."""
        return CURRENT if self.ledger is None else self.found or 1


def frames_foreign_text(run: RunServices) -> bool:
    """Whether this run frames foreign text and reads project instructions (runs recorded
    before flowrun did neither, and are resumed and replayed without them)."""
    return run.recorded(RecordedPrompts).version >= FRAMING
