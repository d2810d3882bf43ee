"""A throw-away step kind: `{note: {file: PATH, text: TEMPLATE}}` writes the rendered text to a
file of the run folder, without an agent, and says so with a step event (which `show` and the
web UI draw). Everything the kind is lives here: its spec (the schema part), its templates and
check (what `validate` sees) and how it runs. It is registered with one line:
`register_step_kind(KIND)`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import ClassVar

from pydantic import Field

from flowrun.atomic_files import replace_beneath
from flowrun.events import StepEvent
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.kinds import StepAt, Template
from flowrun.manifest.project import Loaded
from flowrun.manifest.specs import StepSpec, Strict, WorkflowManifest
from flowrun.runtime.loop.contracts import Outcome
from flowrun.runtime.steps.base import StepContext, StepKind, confined


class NoteBody(Strict):
    file: str = Field(min_length=1, description="The file of the run folder the note is written to.")
    text: str = Field(description="Jinja2: what the note says.")


class NoteStep(StepSpec):
    kind: ClassVar[str] = "note"
    note: NoteBody


class NoteStepKind(StepKind):
    name = "note"
    spec = NoteStep

    def templates(self, step: NoteStep) -> Iterator[Template]:
        yield Template(step.note.text, ("note", "text"))
        yield Template(step.note.file, ("note", "file"), path=True)

    def check(self, step: NoteStep, at: StepAt, wf: Loaded[WorkflowManifest]) -> list[Diagnostic]:
        if PurePosixPath(step.note.file).suffix != ".md":
            where = (*at.parts, "note", "file")
            return [wf.source.diag(where, "a note is a .md file", "e.g. file: notes.md", "bad-note")]
        return []

    async def run(self, step: NoteStep, index: int, prefix: str, ctx: StepContext) -> Outcome:
        text = ctx.render(step.note.text, "a note")
        path = confined(ctx.run, ctx.render(step.note.file, "a note's file").strip(), "note")
        replace_beneath(ctx.run.workspace, path, text)
        written = path.relative_to(ctx.run.workspace).as_posix()
        ctx.run.emit(
            StepEvent(step=f"{prefix}step{index}", kind="note", phase="note", text=f"wrote {written}")
        )
        return Outcome("completed", text, 0, output=written)


KIND = NoteStepKind()
