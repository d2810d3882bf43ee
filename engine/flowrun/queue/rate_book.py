"""The models' rate limits shared by every worker of a queue: each model's schedule (when its
request and token budgets are next free: runtime/models/rate_limits.Schedule) is a row of the
queue's database, updated under a row lock on the database's clock, so the runs of all workers,
on any machine, stay under a model's `rate_limit` together."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from flowrun.queue.store import Store
from flowrun.runtime.models.rate_limits import Limit, Schedule


class QueueBook:
    """A LimitBook (runtime/models/rate_limits.py) kept in the queue's database."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def reserve(self, limit: Limit, tokens: int) -> Awaitable[float]:
        return asyncio.to_thread(self._reserve, limit, tokens)

    def _reserve(self, limit: Limit, tokens: int) -> float:
        def update(requests_at: float, tokens_at: float, now: float) -> tuple[float, float, float]:
            schedule = _schedule(requests_at, tokens_at)
            start = schedule.reserve(limit, tokens, now)
            return schedule.requests_at, schedule.tokens_at, start

        return self.store.rate_schedule(limit.key, update)

    def settle(self, limit: Limit, estimated: int, actual: int) -> None:
        def update(requests_at: float, tokens_at: float, now: float) -> tuple[float, float, float]:
            schedule = _schedule(requests_at, tokens_at)
            schedule.settle(limit, estimated, actual)
            return schedule.requests_at, schedule.tokens_at, now

        # the answer is back: its true cost is booked in the background
        asyncio.get_running_loop().run_in_executor(None, self.store.rate_schedule, limit.key, update)


def _schedule(requests_at: float, tokens_at: float) -> Schedule:
    schedule = Schedule()
    schedule.requests_at, schedule.tokens_at = requests_at, tokens_at
    return schedule
