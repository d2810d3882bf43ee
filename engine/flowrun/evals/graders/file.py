"""The `file` grader: a file the run left (any of a glob's matches may satisfy it), what it
contains and matches; or that no such file exists."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from flowrun.evals.grading import Checked, GraderKind, GraderScore, scored, search, texts
from flowrun.manifest.checks.eval_files import GraderAt, regex_problems
from flowrun.manifest.eval_specs import GraderBase
from flowrun.manifest.kinds import Problem
from flowrun.manifest.spec_base import Strict, Texts
from flowrun.pinned import walk

if TYPE_CHECKING:
    from flowrun.evals.outcome import Outcome


class FileCheck(Strict):
    path: str = Field(
        min_length=1,
        description="A file in the run folder (a glob such as `workspace/notes/*.md` matches any of "
        "several).",
    )
    exists: bool = Field(default=True, description="false: no such file may exist.")
    contains: Texts | None = Field(default=None, description="Text (or texts) the file must contain.")
    matches: str | None = Field(default=None, description="A Python regex the file must match (multiline).")


class FileGrader(GraderBase):
    """A file the run left (any of a glob's matches may satisfy it); score: share of checks held."""

    kind: ClassVar[str] = "file"
    file: FileCheck = Field(description="A file in the run's folder that must (or must not) exist.")


class FileKind(GraderKind):
    name = "file"
    spec = FileGrader

    def check(self, grader: FileGrader, at: GraderAt) -> list[Problem]:
        return regex_problems(grader.file.matches)

    def grade(self, grader: FileGrader, name: str, outcome: Outcome, here: Path) -> GraderScore:
        spec = grader.file
        matched = sorted(_glob(outcome.run_dir, spec.path))
        if not spec.exists:
            found = f"; found {matched[0]}" if matched else ""
            return scored(grader, name, [Checked(not matched, f"no file {spec.path}{found}")])
        if not matched:
            return scored(grader, name, [Checked(False, f"{spec.path} exists; it was not written")])
        best: list[Checked] = []
        for rel in matched:  # the file that holds the most checks speaks for the glob
            text = outcome.file_text(rel) or ""
            checks = [Checked(True, f"{rel} exists")]
            checks += [Checked(n in text, f"{rel} contains {n!r}") for n in texts(spec.contains)]
            if spec.matches is not None:
                held = search(spec.matches, text, re.MULTILINE)
                checks.append(Checked(held, f"{rel} matches /{spec.matches}/"))
            if not best or sum(c.ok for c in checks) > sum(c.ok for c in best):
                best = checks
        return scored(grader, name, best)


def _glob(root: Path, pattern: str) -> list[str]:
    """Files of the run folder matching `pattern` (relative paths; never outside the folder)."""
    if not any(c in pattern for c in "*?["):
        path = (root / pattern).resolve()
        return [pattern] if path.is_relative_to(root.resolve()) and path.is_file() else []
    found = []
    real = root.resolve()
    for path in walk(real):  # (the agents' tree: walked without recursion, 256 deep at most)
        rel = path.relative_to(real).as_posix()
        if fnmatch.fnmatchcase(rel, pattern) and path.is_file():
            found.append(rel)
    return found


KIND = FileKind()
