"""The run's budgets (the workflow's `limits`): checked before every model call."""

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

    def check(self) -> None:
        """Raise BudgetExceeded when a limit is already reached (the next call would pass it)."""
        lim = self.limits
        if lim.max_total_steps is not None and self.model_calls >= lim.max_total_steps:
            raise BudgetExceeded(f"max_total_steps ({lim.max_total_steps}) reached", "max_total_steps")
        if lim.max_total_tokens is not None and self.usage.total_tokens >= lim.max_total_tokens:
            raise BudgetExceeded(f"max_total_tokens ({lim.max_total_tokens}) reached", "max_total_tokens")
        if lim.max_cost_usd is not None and self.usage.total_cost >= lim.max_cost_usd:
            raise BudgetExceeded(f"max_cost_usd (${lim.max_cost_usd}) reached", "max_cost_usd")
        elapsed = time.monotonic() - self.started
        if lim.max_wall_time_s is not None and elapsed >= lim.max_wall_time_s:
            raise BudgetExceeded(f"max_wall_time_s ({lim.max_wall_time_s} s) reached", "max_wall_time_s")

    def spend_call(self) -> None:
        """Check, then count one model call."""
        self.check()
        self.model_calls += 1
