"""The run's budgets (the workflow's `limits`): checked before every model call. Under
`on_budget: ask`, a person may grant more of a limit that was reached (`granted`)."""

from __future__ import annotations

import time

from flowrun.errors import BudgetExceeded
from flowrun.manifest.specs import Limits
from flowrun.runtime.models.usage import UsageBook


class Budgets:
    def __init__(self, limits: Limits, usage: UsageBook) -> None:
        self.limits = limits
        self.usage = usage
        self.model_calls = 0
        self.started = time.monotonic()
        self.granted: dict[str, float] = {}  # limit -> what decisions added to it

    def value(self, limit: str) -> float | None:
        """A limit as it stands: the workflow's, plus what was granted."""
        base = getattr(self.limits, limit, None)
        return None if base is None else float(base) + self.granted.get(limit, 0.0)

    def grant(self, limit: str, amount: float) -> None:
        self.granted[limit] = self.granted.get(limit, 0.0) + amount

    def check(self) -> None:
        """Raise BudgetExceeded when a limit is already reached (the next call would pass it)."""
        steps, tokens = self.value("max_total_steps"), self.value("max_total_tokens")
        cost, wall = self.value("max_cost_usd"), self.value("max_wall_time_s")
        if steps is not None and self.model_calls >= steps:
            raise BudgetExceeded(f"max_total_steps ({steps:g}) reached", "max_total_steps")
        if tokens is not None and self.usage.total_tokens >= tokens:
            raise BudgetExceeded(f"max_total_tokens ({tokens:g}) reached", "max_total_tokens")
        if cost is not None and self.usage.total_cost >= cost:
            raise BudgetExceeded(f"max_cost_usd (${cost:g}) reached", "max_cost_usd")
        elapsed = time.monotonic() - self.started
        if wall is not None and elapsed >= wall:
            raise BudgetExceeded(f"max_wall_time_s ({wall:g} s) reached", "max_wall_time_s")

    def spend_call(self) -> None:
        """Check, then count one model call."""
        self.check()
        self.model_calls += 1
