"""The local backend: every item's run is a task on this process's event loop, at most
`concurrency` at once. Runs share the process's SDK clients (one connection pool per model
settings), its parsed workflow and its rate-limit book, so a batch costs memory and file
descriptors in proportion to its concurrency, not to its number of items."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

from flowrun.api import Workflow
from flowrun.batch.jobs import Job, run_job, stopped
from flowrun.batch.runner import Tally


class LocalBackend:
    def __init__(self, concurrency: int, workflow: Workflow | None = None) -> None:
        self.concurrency = concurrency
        self.workflow = workflow  # loaded once for every item

    async def run(self, jobs: list[Job], tally: Tally) -> None:
        queue = iter(jobs)
        workers = [
            asyncio.create_task(self._worker(queue, tally)) for _ in range(min(self.concurrency, len(jobs)))
        ]
        watcher = asyncio.create_task(_cancel_on_stop(tally, workers))
        try:
            await asyncio.gather(*workers)
        finally:
            watcher.cancel()
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, watcher, return_exceptions=True)

    async def _worker(self, queue: Iterator[Job], tally: Tally) -> None:
        for job in queue:
            if tally.stop.is_set():
                return
            tally.starting(job)
            try:
                result = await run_job(job, tally.listener(job.item_id), self.workflow)
            except asyncio.CancelledError:
                tally.ended(stopped(job))
                task = asyncio.current_task()
                if tally.stop.is_set() and task is not None and task.uncancel() == 0:
                    return  # stopped by the batch's budget, not by whoever runs the batch
                raise
            tally.ended(result)


async def _cancel_on_stop(tally: Tally, workers: list[asyncio.Task[None]]) -> None:
    """The batch's budget is spent: the running items stop (resumably) and no other starts."""
    await tally.stop.wait()
    for worker in workers:
        worker.cancel()
