"""The `budget` grader: ceilings the run's cost and time must stay within: its cost, model
calls, tokens and wall time (each a check of its own: the score is the share that hold)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from flowrun.evals.grading import Checked, GraderKind, GraderScore, scored
from flowrun.manifest.checks.eval_files import GraderAt
from flowrun.manifest.eval_specs import GraderBase
from flowrun.manifest.kinds import Problem
from flowrun.manifest.spec_base import Strict

if TYPE_CHECKING:
    from flowrun.evals.outcome import Outcome


class BudgetCheck(Strict):
    max_cost_usd: float | None = Field(
        default=None,
        gt=0,
        description="The run's cost in USD (unknown when its models have no price: fails).",
    )
    max_calls: int | None = Field(default=None, ge=1, description="Model calls over all agents.")
    max_steps: int | None = Field(default=None, ge=1, description="The older name of `max_calls`.")
    max_tokens: int | None = Field(default=None, ge=1, description="Tokens over all agents.")
    max_seconds: float | None = Field(
        default=None,
        gt=0,
        description="The run's wall time in seconds, from its first event to its end (each attempt's, "
        "added up when it was resumed; offline: the recorded run's).",
    )


class BudgetGrader(GraderBase):
    kind: ClassVar[str] = "budget"
    budget: BudgetCheck = Field(
        description="Ceilings the run's cost, model calls, tokens and time must stay within."
    )


class BudgetKind(GraderKind):
    name = "budget"
    spec = BudgetGrader

    def check(self, grader: BudgetGrader, at: GraderAt) -> list[Problem]:
        if grader.budget.max_calls is not None and grader.budget.max_steps is not None:
            return [
                (
                    "give max_calls or max_steps, not both",
                    "max_steps is the older name of max_calls",
                    "budget-twice",
                )
            ]
        return []

    def grade(self, grader: BudgetGrader, name: str, outcome: Outcome, here: Path) -> GraderScore:
        spec = grader.budget
        checks = []
        calls = spec.max_calls if spec.max_calls is not None else spec.max_steps
        if calls is not None:
            made = outcome.steps
            checks.append(Checked(made <= calls, f"at most {calls} model calls; {made} made"))
        if spec.max_tokens is not None:
            used = outcome.total_tokens
            checks.append(Checked(used <= spec.max_tokens, f"at most {spec.max_tokens} tokens; {used} used"))
        if spec.max_cost_usd is not None:
            cost = outcome.cost_usd
            if cost is None:
                checks.append(Checked(False, "the run's models have no price, so its cost is unknown"))
            else:
                limit = spec.max_cost_usd
                checks.append(Checked(cost <= limit, f"at most ${limit:g}; it cost ${cost:.6f}"))
        if spec.max_seconds is not None:
            took = outcome.seconds
            if took is None:
                checks.append(Checked(False, "the run recorded no time (it never began)"))
            else:
                limit_s = spec.max_seconds
                checks.append(Checked(took <= limit_s, f"at most {limit_s:g} s; it took {took:.2f} s"))
        return scored(grader, name, checks)


KIND = BudgetKind()
