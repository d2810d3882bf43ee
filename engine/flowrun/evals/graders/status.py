"""The `status` grader: the status (or one of the statuses) the run must end with."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from flowrun.evals.grading import Checked, GraderKind, GraderScore, scored, short
from flowrun.manifest.eval_specs import GraderBase, RunStatus

if TYPE_CHECKING:
    from flowrun.evals.outcome import Outcome


class StatusGrader(GraderBase):
    kind: ClassVar[str] = "status"
    status: RunStatus | list[RunStatus] = Field(
        description="The status (or one of the statuses) the run must end with."
    )


class StatusKind(GraderKind):
    name = "status"
    spec = StatusGrader

    def grade(self, grader: StatusGrader, name: str, outcome: Outcome, here: Path) -> GraderScore:
        wanted: list[str] = [grader.status] if isinstance(grader.status, str) else list(grader.status)
        ok = outcome.status in wanted
        detail = f"status {' or '.join(wanted)}" + (
            "" if ok else f"; the run ended {outcome.status}: {short(outcome.message)}"
        )
        return scored(grader, name, [Checked(ok, detail)])


KIND = StatusKind()
