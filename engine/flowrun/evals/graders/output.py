"""The `output` grader: checks of the output's text (contains, does not contain, equals,
matches); the score is the share of checks that hold."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from flowrun.evals.grading import Checked, GraderKind, GraderScore, failed, scored, search, short, texts
from flowrun.manifest.checks.eval_files import GraderAt, regex_problems
from flowrun.manifest.eval_specs import GraderBase
from flowrun.manifest.kinds import Problem
from flowrun.manifest.spec_base import Strict, Texts

if TYPE_CHECKING:
    from flowrun.evals.outcome import Outcome


class OutputCheck(Strict):
    file: str | None = Field(
        default=None,
        description="A file in the run folder (default: the workflow's `output`, else the run's final "
        "answer).",
    )
    contains: Texts | None = Field(default=None, description="Text (or texts) it must contain.")
    not_contains: Texts | None = Field(default=None, description="Text (or texts) it must not contain.")
    matches: str | None = Field(
        default=None, description="A Python regex it must match (re.search, multiline)."
    )
    equals: str | None = Field(
        default=None, description="Text it must equal (leading and trailing whitespace ignored)."
    )
    ignore_case: bool = Field(
        default=False, description="Compare contains, equals and matches ignoring case."
    )


class OutputGrader(GraderBase):
    """Checks of the output's text; the score is the share of checks that hold."""

    kind: ClassVar[str] = "output"
    output: OutputCheck = Field(description="What the output must contain, match or equal.")


class OutputKind(GraderKind):
    name = "output"
    spec = OutputGrader

    def check(self, grader: OutputGrader, at: GraderAt) -> list[Problem]:
        return regex_problems(grader.output.matches)

    def grade(self, grader: OutputGrader, name: str, outcome: Outcome, here: Path) -> GraderScore:
        spec = grader.output
        text, what = outcome.output_text(spec.file)
        if text is None:
            return failed(grader, name, f"{what} was not written")
        folded = text.casefold() if spec.ignore_case else text

        def norm(needle: str) -> str:
            return needle.casefold() if spec.ignore_case else needle

        checks = [Checked(norm(n) in folded, f"{what} contains {n!r}") for n in texts(spec.contains)]
        checks += [
            Checked(norm(n) not in folded, f"{what} does not contain {n!r}") for n in texts(spec.not_contains)
        ]
        if spec.equals is not None:
            same = norm(spec.equals.strip()) == folded.strip()
            it_is = "" if same else f"; it is {short(text)!r}"
            checks.append(Checked(same, f"{what} equals {short(spec.equals)!r}{it_is}"))
        if spec.matches is not None:
            flags = re.MULTILINE | (re.IGNORECASE if spec.ignore_case else 0)
            found = search(spec.matches, text, flags)
            it_is = "" if found else f"; it is {short(text)!r}"
            checks.append(Checked(found, f"{what} matches /{spec.matches}/{it_is}"))
        return scored(grader, name, checks)


KIND = OutputKind()
