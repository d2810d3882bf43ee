"""The `budget` grader: ceilings the run's usage must stay within (model calls, tokens, cost)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from flowrun.evals.grading import Checked, GraderKind, GraderScore, scored
from flowrun.manifest.eval_specs import GraderBase
from flowrun.manifest.spec_base import Strict

if TYPE_CHECKING:
    from flowrun.evals.outcome import Outcome


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


class BudgetKind(GraderKind):
    name = "budget"
    spec = BudgetGrader

    def grade(self, grader: BudgetGrader, name: str, outcome: Outcome, here: Path) -> GraderScore:
        spec = grader.budget
        checks = []
        if spec.max_steps is not None:
            steps = outcome.steps
            checks.append(
                Checked(steps <= spec.max_steps, f"at most {spec.max_steps} model calls; {steps} made")
            )
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
        return scored(grader, name, checks)


KIND = BudgetKind()
