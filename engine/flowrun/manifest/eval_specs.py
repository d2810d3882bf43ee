"""The eval set manifest (`kind: evalset`, `flowrun eval`): a workflow, its cases (inline, or a
JSONL or CSV dataset next to the file) and the graders that score each case's run.

A grader is a mapping with one kind key (`output:`, `status:`, `judge:`, ...) and the keys every
grader takes (`name`, `min_score`, `weight`); the union is told apart by which kind key is
present, like a step. Its members are not listed here: each grader's module (evals/graders/)
brings its spec model and registers it (manifest/kinds.py, evals/grader_kinds.py)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from flowrun.manifest import unions
from flowrun.manifest.spec_base import Name, Strict
from flowrun.manifest.unions import KindUnion, key_tagger

CASE_ID = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
# the states a run can end a command in (flowrun/states.py)
RunStatus = Literal[
    "completed", "failed", "max_steps", "budget_exceeded", "waiting", "cancelled", "interrupted"
]
Score = Annotated[float, Field(ge=0, le=1)]


class GraderBase(Strict):
    """The keys every grader takes besides its kind key."""

    kind: ClassVar[str] = ""
    default_pass: ClassVar[float] = 1.0  # the pass mark when its grader sets no min_score
    name: Name | None = Field(
        default=None,
        description="The grader's name in reports and in `--min-score NAME=X` (default: its kind, "
        "with its position when the kind repeats).",
    )
    min_score: Score | None = Field(
        default=None,
        description="The pass mark (0..1): a run passes this grader when its score reaches it, and "
        "when it is set, the grader's mean score over every run must reach it too or `flowrun eval` "
        "exits 1 (default pass mark: 1 for the deterministic graders, 0.5 for judges; no gate).",
    )
    weight: float = Field(
        default=1.0, gt=0, description="The grader's weight in a run's score (a weighted mean)."
    )

    @property
    def pass_mark(self) -> float:
        return self.default_pass if self.min_score is None else self.min_score


def _grader_keys() -> list[str]:
    return list(unions.members("grader"))


# a grader: one of the registered graders' specs (evals/graders/), told apart by its kind key
Grader = Annotated[GraderBase, KindUnion("grader", key_tagger(_grader_keys))]


# ---------------------------------------------------------------- the eval set


class EvalCase(Strict):
    """One case: the workflow's inputs, what is expected, and graders of its own."""

    id: str = Field(pattern=CASE_ID, description="The case's name: letters, digits, _ and -.")
    inputs: dict[str, object] = Field(
        default_factory=dict, description="The workflow's inputs for this case."
    )
    expected: object = Field(
        default=None,
        description="What the case expects, any value: graders' texts and judges' rubrics see it as "
        "`expected` (e.g. `contains: '{{ expected.term }}'`).",
    )
    graders: list[Grader] = Field(
        default_factory=list, description="Graders of this case only (after the eval set's own)."
    )


class EvalSetManifest(Strict):
    """`NAME.eval.yaml`: a workflow, cases of its inputs and the graders every case's run is
    scored by (`flowrun eval`)."""

    version: Literal[1] = Field(description="Manifest format version.")
    kind: Literal["evalset"] = Field(description="`evalset`.")
    name: Name = Field(description="The eval set's name (reports, the default output folder).")
    description: str | None = Field(default=None, description="What the eval set checks.")
    workflow: str = Field(description="The workflow file, relative to this file.")
    cases: list[EvalCase] | None = Field(
        default=None, description="The cases, inline (or `dataset:` instead)."
    )
    dataset: str | None = Field(
        default=None,
        description="A JSONL file (one case a line: {id, inputs, expected, graders}) or a CSV file "
        "(columns `id`, `expected` and one per input), relative to this file (or `cases:` instead).",
    )
    graders: list[Grader] = Field(default_factory=list, description="Graders of every case.")
    repeat: int = Field(
        default=1,
        ge=1,
        le=100,
        description="Runs per case (pass@k and the spread over them); `--repeat` overrides.",
    )
    min_score: Score | None = Field(
        default=None,
        description="The overall score (the mean of the cases' scores) must reach this, or `flowrun eval` "
        "exits 1; `--min-score` overrides.",
    )
    cassettes: str | None = Field(
        default=None,
        description="Where `--record` keeps each case's run and the judges' answers and `--offline` reads "
        "them, relative to this file (default: cassettes/NAME).",
    )
    concurrency: int | None = Field(
        default=None,
        ge=1,
        le=1000,
        description="At most this many of its runs at once, whatever `--concurrency` says; 1 runs the cases "
        "one after another, in order (cases that build on each other, as a memory's do).",
    )
    memory: Literal["shared", "fresh"] = Field(
        default="shared",
        description="The memories the workflow's agents declare: their own (shared), or fresh: every one "
        "starts empty in the eval's folder (OUT/VARIANT/memory) and is kept across its cases, so a "
        "case can measure what an earlier case's run left in memory.",
    )
