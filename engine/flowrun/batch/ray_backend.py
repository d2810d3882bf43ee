"""The Ray backend (`pip install 'flowrun[ray]'`): each item is a Ray task that runs the same
engine as the local backend (batch/jobs.py) in a worker process anywhere on the cluster.

- Run folders: a worker that sees the batch folder (one machine, or a shared path) writes the
  item's run folder in place; one that does not (or with `ship_runs`) runs it in a folder of its
  own and sends it back as an archive, which the driver unpacks into the batch folder (a resumed
  item's folder travels to the worker first).
- Rate limits and costs go through one `Coordinator` actor: every worker's calls take their
  start times from its rate-limit book, so the cluster as a whole stays under each model's
  `rate_limit`, and workers report costs to it as they spend, for the progress display and the
  batch's budget.
- The driver joins the cluster at `address` (else $RAY_ADDRESS, else starts a local one; a
  process that already called `ray.init` is used as it is), keeps at most `concurrency` items in
  flight, and cancels them (resumably: their runs end `cancelled`) when the budget is spent or
  the batch is interrupted. Each task reserves `cpus` CPUs.
"""

from __future__ import annotations

import asyncio
import io
import os
import secrets
import shutil
import tarfile
import tempfile
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from flowrun.batch.folder import BatchFolder, ItemResult
from flowrun.batch.jobs import Job, cost_listener, run_job, stopped
from flowrun.batch.runner import Tally
from flowrun.errors import UsageError
from flowrun.runtime.models import rate_limits

TOKEN_FILE = ".batch-token"  # in runs/: a worker that reads the driver's token shares the folder
POLL_S = 0.25
FORWARDED_PREFIXES = ("OPENAI_", "ANTHROPIC_", "FLOWRUN_", "TAVILY_")


def _ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise UsageError(
            "the ray backend needs Ray", "pip install 'flowrun[ray]', or use --backend local"
        ) from None
    return ray


# ---------------------------------------------------------------- the actor


class Coordinator:
    """Shared by the driver and every worker of a batch (a Ray actor): the rate-limit book, the
    costs reported since the driver last asked, and what is left of the batch's budget."""

    def __init__(self, budget_left: float | None = None) -> None:
        self.book = rate_limits.LocalBook()
        self.costs: dict[str, float] = {}
        self.budget_left = budget_left

    def reserve(self, limit: rate_limits.Limit, tokens: int) -> float:
        return self.book.reserve(limit, tokens)

    def settle(self, limit: rate_limits.Limit, estimated: int, actual: int) -> None:
        self.book.settle(limit, estimated, actual)

    def spent(self, item_id: str, cost_usd: float) -> bool:
        """Count a cost; True when the batch's budget is now used up."""
        self.costs[item_id] = self.costs.get(item_id, 0.0) + cost_usd
        if self.budget_left is None:
            return False
        self.budget_left -= cost_usd
        return self.budget_left <= 1e-9

    def take_costs(self) -> dict[str, float]:
        costs, self.costs = self.costs, {}
        return costs


class ActorBook:
    """A worker's rate-limit book: start times come from the coordinator."""

    def __init__(self, coordinator: Any) -> None:
        self.coordinator = coordinator

    def reserve(self, limit: rate_limits.Limit, tokens: int) -> Any:
        return self.coordinator.reserve.remote(limit, tokens)  # an ObjectRef: awaitable

    def settle(self, limit: rate_limits.Limit, estimated: int, actual: int) -> None:
        self.coordinator.settle.remote(limit, estimated, actual)


# ---------------------------------------------------------------- the task


def run_item(
    job: Job, coordinator: Any, token: str, ship: bool | None, seed: bytes | None
) -> tuple[ItemResult, bytes | None]:
    """A Ray task: one item, in place or in a folder of the worker's own that is sent back."""
    import ray

    rate_limits.use_book(ActorBook(coordinator))
    running: list[asyncio.Task[object]] = []

    def spent(item_id: str, cost_usd: float) -> None:
        # asked and answered before the next model call, so the budget stops this item at once
        # instead of when the driver next polls (a short block of the run's loop)
        if ray.get(coordinator.spent.remote(item_id, cost_usd)) and running:
            running[0].cancel()  # ends the run `cancelled`, resumable

    async def run(this: Job) -> ItemResult:
        running.append(asyncio.current_task())  # type: ignore[arg-type]
        return await run_job(this, cost_listener(job.item_id, spent))

    if ship is None:
        ship = not _sees_batch(job, token)
    if not ship:
        return asyncio.run(run(job)), None
    with tempfile.TemporaryDirectory(prefix="flowrun-item-") as tmp:
        run_dir = Path(tmp) / "runs" / job.item_id
        if seed is not None:
            unpack(seed, run_dir)
        local = replace(job, batch_dir=tmp, run_dir=str(run_dir))
        try:
            result = asyncio.run(run(local))
        except (asyncio.CancelledError, KeyboardInterrupt):
            result = stopped(local)  # stopped by the budget: its folder still goes back
        return result, pack(run_dir) if run_dir.exists() else None


def _sees_batch(job: Job, token: str) -> bool:
    try:
        return (Path(job.batch_dir) / "runs" / TOKEN_FILE).read_text(encoding="utf-8") == token
    except OSError:
        return False


def pack(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(folder, arcname=".")
    return buffer.getvalue()


def unpack(data: bytes, folder: Path) -> None:
    """A run folder sent back by a worker replaces the one in the batch folder."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(folder, filter="data")  # no absolute paths, links out or devices


# ---------------------------------------------------------------- the driver


class RayBackend:
    def __init__(
        self,
        concurrency: int,
        address: str | None,
        cpus: float,
        ship: bool | None,
        folder: BatchFolder,
        overrides: list[str] | dict[str, object] | None = None,
    ) -> None:
        self.concurrency = concurrency
        self.address = address
        self.cpus = cpus
        self.ship = ship
        self.folder = folder
        self.token = secrets.token_hex(16)
        self.overrides = overrides or []  # the workflow's `--set`s: each worker loads it again

    async def run(self, jobs: list[Job], tally: Tally) -> None:
        ray = _ray()
        started_ray = self._init(ray, jobs)
        try:
            (self.folder.runs / TOKEN_FILE).write_text(self.token, encoding="utf-8")
            left = None
            if tally.max_cost_usd is not None:
                left = tally.max_cost_usd - (tally.total_cost or 0.0)
            coordinator = ray.remote(num_cpus=0)(Coordinator).remote(left)
            task = ray.remote(num_cpus=self.cpus, max_retries=0)(run_item)
            await self._drive(ray, task, coordinator, jobs, tally)
        finally:
            if started_ray:
                ray.shutdown()

    def _init(self, ray: ModuleType, jobs: list[Job]) -> bool:
        if ray.is_initialized():
            return False
        address = self.address or os.environ.get("RAY_ADDRESS")
        env = _forwarded_env() if address else {}
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            logging_level="WARNING",
            runtime_env={"env_vars": env} if env else None,
        )
        return True

    async def _drive(
        self, ray: ModuleType, task: Any, coordinator: Any, jobs: list[Job], tally: Tally
    ) -> None:
        queue = iter(jobs)
        in_flight: dict[object, Job] = {}  # Ray's ObjectRef of each item's task
        try:
            while True:
                while len(in_flight) < self.concurrency and not tally.stop.is_set():
                    job = next(queue, None)
                    if job is None:
                        break
                    tally.starting(job)
                    sent = replace(job, overrides=self.overrides)
                    in_flight[task.remote(sent, coordinator, self.token, self.ship, self._seed(job))] = job
                if not in_flight:
                    return
                if tally.stop.is_set():
                    for ref in in_flight:
                        ray.cancel(ref)
                ready, _ = await asyncio.to_thread(ray.wait, list(in_flight), num_returns=1, timeout=POLL_S)
                for item_id, cost in (
                    await asyncio.to_thread(ray.get, coordinator.take_costs.remote())
                ).items():
                    tally.spent(item_id, cost)
                for ref in ready:
                    tally.ended(self._outcome(ray, ref, in_flight.pop(ref)))
        finally:
            if in_flight:  # interrupted: stop the running items (they record `cancelled`) and wait
                for ref in in_flight:
                    ray.cancel(ref)
                for ref, job in in_flight.items():
                    tally.ended(self._outcome(ray, ref, job))

    def _seed(self, job: Job) -> bytes | None:
        """The run folder a resumed item needs, when the worker may not see it."""
        run_dir = Path(job.run_dir)
        return pack(run_dir) if job.resume and self.ship is not False and run_dir.exists() else None

    def _outcome(self, ray: ModuleType, ref: object, job: Job) -> ItemResult:
        try:
            result, shipped = ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            return stopped(job)
        except ray.exceptions.RayTaskError as e:
            cause = e.cause if getattr(e, "cause", None) is not None else e
            if isinstance(cause, KeyboardInterrupt | asyncio.CancelledError):
                return stopped(job)
            return replace(stopped(job), status="failed", error=f"the item's task failed: {cause}"[:500])
        except ray.exceptions.RayError as e:  # the worker died: its run folder is resumable
            return replace(stopped(job), error=f"the worker running it was lost: {type(e).__name__}")
        if shipped is not None:
            unpack(shipped, Path(job.run_dir))
        finished: ItemResult = replace(result, run_dir=os.path.relpath(job.run_dir, job.batch_dir))
        return finished


def _forwarded_env() -> dict[str, str]:
    """The variables workers need to call models, sent in the job's runtime environment when
    joining an existing cluster: the provider SDKs' and flowrun's own."""
    return {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_PREFIXES)}
