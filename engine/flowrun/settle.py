"""Work that must be done whole, off the event loop: a run's seeding when it copies files (their
size is the user's: a `workspace.copy` folder can take seconds, and on the loop thread that
holds up every other run of the process), and the fsync of a file a tool writes (it waits for
the disk). A run's other bookkeeping (its folder, run.json, its lock) and a small file tool's
other system calls are done on the loop: a hop to a worker thread costs more CPU than those
few operations, as every system call the thread makes hands the interpreter lock to the loop's
thread and back."""

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
