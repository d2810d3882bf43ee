"""Work that must be done whole, off the event loop: the files a run writes when it ends and
the release of its folder's lock. On a busy disk one rename or unlink can take milliseconds
(a journal commit that another run's fsync started), and on the loop thread that holds up
every other run of the process (a batch runs fifty at once); in a worker thread only the run
that is ending waits."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def settle(work: Callable[[], T]) -> T:
    """`work()` in a worker thread. It is done whole however the caller is interrupted: a
    cancel while it runs (a late Ctrl-C, a batch's budget) waits for it to end, then goes on
    as a cancel; it is meant for bookkeeping whose outcome is already decided."""
    job = asyncio.ensure_future(asyncio.to_thread(work))
    try:
        return await asyncio.shield(job)
    except asyncio.CancelledError:
        while not job.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(job)
        if not job.cancelled():
            job.exception()  # retrieved: the cancel is what the caller sees
        raise


async def settle_decided(work: Callable[[], T]) -> T | None:
    """`settle(work)` for what comes after a run's outcome is decided (its end files, the
    release of its lock): a cancel that lands meanwhile (a late Ctrl-C or SIGTERM) is absorbed,
    so the outcome the run reached (a `completed` run, exit 0) stands. None when absorbed."""
    try:
        return await settle(work)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is None:
            raise
        task.uncancel()  # the work was done whole (settle waited for it)
        return None
