"""The eval set manifest (`kind: evalset`, `flowrun eval`): a workflow, its cases (inline, or a
JSONL or CSV dataset next to the file) and the graders that score each case's run.

A grader is a mapping with one kind key (`output:`, `json_path:`, `json_schema:`, `file:`,
`trajectory:`, `status:`, `budget:`, `judge:`) and the keys every grader takes (`name`,
`min_score`, `weight`); the union is told apart by which kind key is present, like a step."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Discriminator, Field, Tag

from flowrun.manifest.spec_base import Name, Strict, Texts

CASE_ID = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
# the states a run can end a command in (flowrun/states.py)
RunStatus = Literal[
    "completed", "failed", "max_steps", "budget_exceeded", "waiting", "cancelled", "interrupted"
]
Score = Annotated[float, Field(ge=0, le=1)]
JUDGE_PASS = 0.5  # a judge's pass mark when its grader sets no min_score


class GraderBase(Strict):
    """The keys every grader takes besides its kind key."""

    kind: ClassVar[str] = ""
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
        if self.min_score is not None:
            return self.min_score
        return JUDGE_PASS if self.kind == "judge" else 1.0


# ---------------------------------------------------------------- deterministic graders


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


class JsonPathCheck(Strict):
    path: str = Field(
        min_length=1,
        description="A JSON path into the output parsed as JSON: `$`, then `.key`, `[index]` or "
        "`['key']` steps (e.g. `$.citations[0].source`).",
    )
    equals: object = Field(description="The value found there must equal this.")
    file: str | None = Field(
        default=None,
        description="The JSON file in the run folder (default: the workflow's `output`, else the final "
        "answer).",
    )


class JsonPathGrader(GraderBase):
    kind: ClassVar[str] = "json_path"
    json_path: JsonPathCheck = Field(description="A value of the JSON output that must equal a given one.")


class JsonSchemaCheck(Strict):
    schema_: dict[str, object] | str = Field(
        alias="schema",
        description="A JSON Schema, inline or as a file path relative to the eval set.",
    )
    file: str | None = Field(
        default=None,
        description="The JSON file in the run folder (default: the workflow's `output`, else the final "
        "answer).",
    )


class JsonSchemaGrader(GraderBase):
    kind: ClassVar[str] = "json_schema"
    json_schema: JsonSchemaCheck = Field(
        description="The output, parsed as JSON, must be valid against a schema."
    )


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


class TrajectoryCheck(Strict):
    agent: str | None = Field(
        default=None, description="Only the calls of this agent (default: every agent, sub-agents included)."
    )
    called: list[str] = Field(default_factory=list, description="Tools that must be called at least once.")
    order: list[str] = Field(
        default_factory=list,
        description="Tools that must be called in this order (each call after one of the tool before it).",
    )
    max_calls: dict[str, int] = Field(
        default_factory=dict,
        description="Tool -> the most calls it may get (`'*'`: every tool together).",
    )
    never: list[str] = Field(default_factory=list, description="Tools that must never be called.")


class TrajectoryGrader(GraderBase):
    """The run's tool calls (its events.jsonl `tool_call` events); score: share of checks held."""

    kind: ClassVar[str] = "trajectory"
    trajectory: TrajectoryCheck = Field(description="Which tools the run calls, in what order, how often.")


class StatusGrader(GraderBase):
    kind: ClassVar[str] = "status"
    status: RunStatus | list[RunStatus] = Field(
        description="The status (or one of the statuses) the run must end with."
    )


class BudgetCheck(Strict):
    max_cost_usd: float | None = Field(
        default=None,
        gt=0,
        description="The run's cost in USD (unknown when its models have no price: fails).",
    )
    max_steps: int | None = Field(default=None, ge=1, description="Model calls over all agents.")
    max_tokens: int | None = Field(default=None, ge=1, description="Tokens over all agents.")


class BudgetGrader(GraderBase):
    kind: ClassVar[str] = "budget"
    budget: BudgetCheck = Field(description="Ceilings the run's usage must stay within.")


# ---------------------------------------------------------------- judges


class JudgeCheck(Strict):
    model: str = Field(
        min_length=1,
        description="The judging model: a model of the workflow or of models.d/, or provider:model.",
    )
    rubric: str | None = Field(
        default=None,
        description="The rubric, a Jinja2 template with `inputs`, `expected`, `output`, `message`, "
        "`status` and `case`; the judge answers with a score from 0 to 1 and a reason.",
    )
    rubric_file: str | None = Field(
        default=None,
        description="The rubric as a template file, relative to the eval set (instead of `rubric`).",
    )


class JudgeGrader(GraderBase):
    """An LLM judge. Several judges of a run are averaged into its `judges` score."""

    kind: ClassVar[str] = "judge"
    judge: JudgeCheck = Field(description="A model that scores the run against a rubric.")


GRADER_MODELS: tuple[type[GraderBase], ...] = (
    OutputGrader,
    JsonPathGrader,
    JsonSchemaGrader,
    FileGrader,
    TrajectoryGrader,
    StatusGrader,
    BudgetGrader,
    JudgeGrader,
)
GRADER_KINDS = tuple(m.kind for m in GRADER_MODELS)


def _grader_kind(value: object) -> str | None:
    for kind in GRADER_KINDS:
        if (isinstance(value, dict) and kind in value) or getattr(value, kind, None) is not None:
            return kind
    return None


Grader = Annotated[
    Annotated[OutputGrader, Tag("output")]
    | Annotated[JsonPathGrader, Tag("json_path")]
    | Annotated[JsonSchemaGrader, Tag("json_schema")]
    | Annotated[FileGrader, Tag("file")]
    | Annotated[TrajectoryGrader, Tag("trajectory")]
    | Annotated[StatusGrader, Tag("status")]
    | Annotated[BudgetGrader, Tag("budget")]
    | Annotated[JudgeGrader, Tag("judge")],
    Discriminator(_grader_kind),
]


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
