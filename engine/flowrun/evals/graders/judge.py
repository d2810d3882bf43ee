"""The `judge` grader: a model scores the run against a rubric (a Jinja2 template of the case and
its run). `validate` checks its model and rubric here; the judges' panel asks the model
(evals/judges.py), and several judges of a run are averaged into its `judges` score."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from flowrun.evals.grading import GraderKind
from flowrun.manifest.checks.eval_files import GraderAt
from flowrun.manifest.eval_specs import GraderBase
from flowrun.manifest.kinds import Problem
from flowrun.manifest.schema.check import did_you_mean
from flowrun.manifest.spec_base import Strict

# what a rubric sees (evals/judges.py `judge_variables` gives them)
JUDGE_VARIABLES = frozenset({"inputs", "expected", "output", "message", "status", "case"})


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
    default_pass: ClassVar[float] = 0.5
    judge: JudgeCheck = Field(description="A model that scores the run against a rubric.")


class JudgeKind(GraderKind):
    name = "judge"
    spec = JudgeGrader

    def files(self, grader: JudgeGrader) -> list[str]:
        return [grader.judge.rubric_file] if grader.judge.rubric_file else []

    def check(self, grader: JudgeGrader, at: GraderAt) -> list[Problem]:
        from flowrun.manifest.model_config import reference_problem

        judge = grader.judge
        out: list[Problem] = []
        named = set(at.project.models) | set(at.workflow.models if at.workflow is not None else {})
        problem = reference_problem(judge.model, named)
        if problem is not None:
            hint = (
                did_you_mean(judge.model, named)
                or "name a model of the workflow or models.d/, or provider:model"
            )
            out.append((f"judge: {problem}", hint, "unknown-model"))
        if (judge.rubric is None) == (judge.rubric_file is None):
            return [
                *out,
                ("a judge needs exactly one of `rubric` or `rubric_file`", "keep one of them", "invalid"),
            ]
        text = judge.rubric
        if judge.rubric_file is not None:
            try:
                text = (at.here / judge.rubric_file).read_text(encoding="utf-8")
            except OSError:
                message = f"rubric_file '{judge.rubric_file}' not found"
                return [*out, (message, "the path is relative to the eval set", "missing-file")]
        return out + _rubric_problems(text or "")


def _rubric_problems(text: str) -> list[Problem]:
    from flowrun.manifest.templates import analyse

    info = analyse(text)
    out: list[Problem] = []
    if info.error is not None:
        out.append((f"judge rubric: {info.error} (its line {info.error_line})", "", "bad-template"))
    for variable in sorted(set(info.variables) - JUDGE_VARIABLES):
        seen = "a rubric sees " + ", ".join(sorted(JUDGE_VARIABLES))
        hint = did_you_mean(variable, JUDGE_VARIABLES) or seen
        out.append((f"judge rubric uses unknown variable '{variable}'", hint, "unknown-variable"))
    return out


KIND = JudgeKind()
