"""What `parallel:` and `foreach:` steps share: running branches at most N at a time (the first
failure cancels the others and is raised as itself, not as an exception group), and the outcome
of a step made of branches."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from flowrun.runtime.loop.contracts import Outcome, OutcomeStatus
from flowrun.runtime.loop.decisions import RunWaiting

T = TypeVar("T")


async def run_branches(branches: list[Callable[[], Awaitable[T]]], limit: int) -> list[T]:
    """Each branch's result, in branch order."""
    semaphore = asyncio.Semaphore(max(limit, 1))
    results: dict[int, T] = {}

    async def one(i: int) -> None:
        async with semaphore:
            results[i] = await branches[i]()

    try:
        async with asyncio.TaskGroup() as group:
            for i in range(len(branches)):
                group.create_task(one(i))
    except BaseExceptionGroup as failed:
        raise first_error(failed) from None
    return [results[i] for i in range(len(branches))]


def first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first exception a branch raised (budget stops, failed model calls, ...); the run
    stopping to wait for a decision only when no branch failed otherwise."""
    leaves = list(_leaves(group))
    return next((e for e in leaves if not isinstance(e, RunWaiting)), leaves[0] if leaves else group)


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for error in group.exceptions:
        if isinstance(error, BaseExceptionGroup):
            yield from _leaves(error)
        else:
            yield error


def statuses(outcomes: list[Outcome | None]) -> list[str]:
    return [o.status if o is not None else "skipped" for o in outcomes]


def combined(kind: str, outcomes: list[Outcome | None]) -> Outcome:
    """A step of branches hit max_steps when one of them did; otherwise it completed."""
    ran = [o for o in outcomes if o is not None]
    status: OutcomeStatus = "max_steps" if any(o.status == "max_steps" for o in ran) else "completed"
    counts: dict[str, int] = {}
    for name in statuses(outcomes):
        counts[name] = counts.get(name, 0) + 1
    summary = ", ".join(f"{n} {name}" for name, n in counts.items()) or "no branches"
    return Outcome(status, f"{kind}: {summary}", sum(o.steps for o in ran))
