"""A throw-away grader: `{length: {max_chars: N}}` passes a run whose output has at most N
characters. Everything the grader is lives here: its spec (the schema part), its check (what
`validate` sees) and how it scores a run. It is registered with one line:
`register_grader(KIND)`."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field

from flowrun.evals.grading import Checked, GraderKind, GraderScore, scored
from flowrun.evals.outcome import Outcome
from flowrun.manifest.checks.eval_files import GraderAt
from flowrun.manifest.eval_specs import GraderBase
from flowrun.manifest.kinds import Problem
from flowrun.manifest.spec_base import Strict


class LengthCheck(Strict):
    max_chars: int = Field(description="The most characters the output may have.")


class LengthGrader(GraderBase):
    kind: ClassVar[str] = "length"
    length: LengthCheck = Field(description="How long the output may be.")


class LengthKind(GraderKind):
    name = "length"
    spec = LengthGrader

    def check(self, grader: LengthGrader, at: GraderAt) -> list[Problem]:
        if grader.length.max_chars < 1:
            return [("max_chars must be at least 1", "e.g. max_chars: 2000", "bad-length")]
        return []

    def grade(self, grader: LengthGrader, name: str, outcome: Outcome, here: Path) -> GraderScore:
        text, what = outcome.output_text(None)
        size = len(text or "")
        return scored(
            grader, name, [Checked(size <= grader.length.max_chars, f"{what} has {size} characters")]
        )


KIND = LengthKind()
