"""What a grader kind is and gives: its runtime side (`GraderKind`: score a run's outcome), the
score it gives (the share of its checks that hold, and what it found), and the helpers graders
share. Texts in a grader may be Jinja2 templates of the case (`{{ expected.term }}`,
`{{ inputs.question }}`), rendered before they are checked."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from flowrun.errors import FlowrunError
from flowrun.manifest.eval_specs import GraderBase
from flowrun.manifest.kinds import GraderSide
from flowrun.types import decode_json

if TYPE_CHECKING:
    from flowrun.evals.outcome import Outcome  # (only read: reading an eval set imports no run reader)

SHOWN = 200  # characters of a text quoted in a detail


@dataclass(slots=True)
class GraderScore:
    name: str
    kind: str
    score: float  # 0..1
    passed: bool  # the score reached the grader's pass mark
    detail: str  # what held and what did not
    weight: float = 1.0
    error: bool = False  # could not grade (a missing file, a judge that did not answer)


@dataclass(frozen=True, slots=True)
class Checked:
    ok: bool
    detail: str


class GraderKind(GraderSide, Protocol):
    """A grader kind: its manifest side (manifest/kinds.py) and how it scores a run. A judge
    (a model scores the run) is asked by the judges' panel instead (evals/judges.py)."""

    def grade(self, grader: Any, name: str, outcome: Outcome, here: Path) -> GraderScore:
        """Score the run; `grader`'s texts are rendered already, `here` is the eval set's
        folder. A FlowrunError is a grader that could not grade (its message says why)."""
        return failed(grader, name, f"a {self.name} grader is scored by a model")


def short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def scored(grader: GraderBase, name: str, checks: list[Checked]) -> GraderScore:
    """A grader's score from its checks: the share that hold."""
    if not checks:
        return GraderScore(name, grader.kind, 1.0, True, "nothing to check", grader.weight)
    score = sum(c.ok for c in checks) / len(checks)
    failed = [c.detail for c in checks if not c.ok]
    detail = "; ".join(failed) if failed else "; ".join(c.detail for c in checks)
    return GraderScore(name, grader.kind, score, score >= grader.pass_mark - 1e-9, detail, grader.weight)


def failed(grader: GraderBase, name: str, detail: str) -> GraderScore:
    return GraderScore(name, grader.kind, 0.0, False, detail, grader.weight, error=True)


def templated(value: object, variables: Mapping[str, object]) -> object:
    """`value` with every string that holds a Jinja2 tag rendered against the case."""
    if isinstance(value, str) and ("{{" in value or "{%" in value):
        from flowrun.manifest.templates import render

        return render(value, variables, what="a grader's text")
    if isinstance(value, list):
        return [templated(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: templated(v, variables) for k, v in value.items()}
    return value


def texts(value: str | list[str] | None) -> list[str]:
    return [] if value is None else [value] if isinstance(value, str) else list(value)


def search(pattern: str, text: str, flags: int) -> bool:
    try:
        return re.search(pattern, text, flags) is not None
    except re.error as e:
        raise FlowrunError(f"invalid regex /{pattern}/: {e}") from None


def json_of(outcome: Outcome, file: str | None) -> tuple[object, str]:
    """The output (or `file` of the run folder) parsed as JSON, and what it is called."""
    text, what = outcome.output_text(file)
    if text is None:
        raise FlowrunError(f"{what} was not written")
    try:
        return decode_json(_unfenced(text)), what
    except ValueError as e:
        raise FlowrunError(f"{what} is not JSON ({e}): {short(text)!r}") from None


def _unfenced(text: str) -> str:
    """A JSON answer inside a ```json fence, as models often write it, without the fence."""
    stripped = text.strip()
    fenced = re.fullmatch(r"```[A-Za-z]*\n(.*)\n```", stripped, re.DOTALL)
    return fenced.group(1) if fenced else stripped
