"""A batch from start to end, whatever the backend: the plan (which items are done, which are
resumed, which start afresh), the tally (results.jsonl, progress, cost so far, the batch's total
budget) and the summary. Backends only run jobs and report to the tally."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from flowrun.api import Workflow
from flowrun.batch.folder import FINAL, NOT_STARTED, BatchFolder, ItemResult
from flowrun.batch.items import Item
from flowrun.batch.jobs import Job, cost_listener
from flowrun.errors import UsageError
from flowrun.events import Event
from flowrun.manifest.graph import run_agents
from flowrun.runtime.durable.event_log import read_lines
from flowrun.runtime.durable.run_folder import never_started
from flowrun.runtime.models.calls import ModelChoice
from flowrun.runtime.options import RunOptions
from flowrun.states import exit_code

# waiting: items wait for decisions (`flowrun approve`/`answer` in their run folders), as a run's 75


@dataclass(slots=True)
class BatchProgress:
    """Where a batch stands, for a progress display (given on every change)."""

    total: int  # items in the items file
    completed: int  # completed, earlier attempts included
    failed: int  # ended another way (failed, max_steps, budget_exceeded)
    running: int
    cost_usd: float | None  # spent by the batch folder's items so far; None when unpriced
    ran: int  # items this invocation has finished (for the rate and the ETA)
    started: float  # time.monotonic() when this invocation began
    last: ItemResult | None = None  # the item that just ended, if any
    waiting: int = 0  # ended waiting for a decision (the next run of the batch resumes them)

    @property
    def pending(self) -> int:
        return self.total - self.completed - self.failed - self.running - self.waiting

    @property
    def eta_s(self) -> float | None:
        """Seconds left at this invocation's pace so far; None before the first item ends."""
        if not self.ran:
            return None
        return (time.monotonic() - self.started) / self.ran * (self.pending + self.running)


@dataclass(slots=True)
class BatchSummary:
    folder: Path
    status: str  # completed | failed | budget_exceeded | waiting | cancelled (flowrun/states.py)
    exit_code: int
    total: int
    completed: int
    failed: int
    stopped: int  # cancelled or interrupted while running (resumed by the next invocation)
    pending: int  # not started (the batch's budget or a stop came first)
    ran: int  # items this invocation ran (the others were done before)
    total_tokens: int
    cost_usd: float | None
    results: Path  # results.jsonl
    message: str = ""
    processes: int | None = None  # the local backend's processes (1: this one); None with Ray
    waiting: int = 0  # items whose runs wait for a decision (resumed by the next run of the batch)

    @property
    def ok(self) -> bool:
        return self.status == "completed"


OnProgress = Callable[[BatchProgress], None]


class Tally:
    """What backends report to: items starting, costs as they are spent, items ending. It keeps
    results.jsonl, the running cost against the batch's budget, and the progress display."""

    def __init__(
        self,
        folder: BatchFolder,
        total: int,
        before: dict[str, ItemResult],
        prior_cost: dict[str, float],
        max_cost_usd: float | None,
        on_progress: OnProgress | None,
    ) -> None:
        self.folder = folder
        self.total = total
        self.results = dict(before)  # the final result of each item so far
        self._ok = sum(1 for r in before.values() if r.ok)  # counts kept as items end: a
        # progress report costs the same at the 10th item as at the 10,000th
        # spent per item, earlier attempts included
        self.cost = {r.id: r.cost_usd for r in before.values() if r.cost_usd is not None} | prior_cost
        self._spent = sum(self.cost.values())
        self.priced = any(r.cost_usd is not None for r in before.values()) or bool(prior_cost)
        self.max_cost_usd = max_cost_usd
        self.on_progress = on_progress
        self.running: set[str] = set()
        self._replaced: dict[str, ItemResult] = {}  # the earlier final result of a running item
        self.waiting: set[str] = set()  # items whose run ended waiting for a decision
        self.ran = 0
        self.started = time.monotonic()
        self.stop = asyncio.Event()
        self.stop_reason: str | None = None

    # ------------------------------------------------------------ reports from backends

    def starting(self, job: Job) -> None:
        self.running.add(job.item_id)
        self.waiting.discard(job.item_id)
        dropped = self.results.pop(job.item_id, None)
        if dropped is not None:
            self._replaced[job.item_id] = dropped
            self._ok -= dropped.ok
        self._changed()

    def spent(self, item_id: str, cost_usd: float) -> None:
        self.priced = True
        self._set_cost(item_id, self.cost.get(item_id, 0.0) + cost_usd)
        self._check_budget()
        self._changed()

    def listener(self, item_id: str) -> Callable[[Event], None]:
        """The on_event of an item's run in this process: its model costs as they happen."""
        return cost_listener(item_id, self.spent)

    def ended(self, result: ItemResult) -> None:
        self.running.discard(result.id)
        replaced = self._replaced.pop(result.id, None)
        if result.status == NOT_STARTED:  # stopped before its run began: nothing ran, nothing
            if replaced is not None:  # is recorded; the item is as it was before
                self.results[result.id] = replaced
                self._ok += replaced.ok
            self._changed()
            return
        if result.status == "waiting":
            self.waiting.add(result.id)
        self.folder.record(result)
        if result.status in FINAL:
            earlier = self.results.get(result.id)
            self._ok += result.ok - (earlier is not None and earlier.ok)
            self.results[result.id] = result
        if result.cost_usd is not None:
            self.priced = True
            self._set_cost(result.id, result.cost_usd)  # the run's own total is the truth
        self.ran += 1
        self._check_budget()
        self._changed(result)

    # ------------------------------------------------------------ state

    def _set_cost(self, item_id: str, cost_usd: float) -> None:
        self._spent += cost_usd - self.cost.get(item_id, 0.0)
        self.cost[item_id] = cost_usd

    @property
    def total_cost(self) -> float | None:
        return round(self._spent, 6) if self.priced else None

    def _check_budget(self) -> None:
        cost = self.total_cost
        if self.max_cost_usd is not None and cost is not None and cost >= self.max_cost_usd:
            if self.stop_reason is None:
                self.stop_reason = (
                    f"the batch's max_cost_usd (${self.max_cost_usd}) was reached (${cost:.4f})"
                )
            self.stop.set()

    def progress(self, last: ItemResult | None = None) -> BatchProgress:
        return BatchProgress(
            total=self.total,
            completed=self._ok,
            failed=len(self.results) - self._ok,
            running=len(self.running),
            cost_usd=self.total_cost,
            ran=self.ran,
            started=self.started,
            last=last,
            waiting=len(self.waiting),
        )

    def _changed(self, last: ItemResult | None = None) -> None:
        if self.on_progress is not None:
            self.on_progress(self.progress(last))


class Backend(Protocol):
    async def run(self, jobs: list[Job], tally: Tally) -> None:
        """Run the jobs, at most the backend's concurrency at once, reporting to `tally`;
        start no job once `tally.stop` is set, and stop the running ones (resumably)."""
        ...


# ---------------------------------------------------------------- plan


@dataclass(slots=True)
class Plan:
    jobs: list[Job] = field(default_factory=list)
    before: dict[str, ItemResult] = field(default_factory=dict)  # final results not run again
    prior_cost: dict[str, float] = field(default_factory=dict)  # spent by runs being resumed


def plan(
    wf: Workflow, items: list[Item], folder: BatchFolder, options: RunOptions, retry_failed: bool
) -> Plan:
    """What each item needs: nothing (completed; or ended otherwise, without --retry-failed),
    resuming (its run folder holds a stopped run, or a failed one to retry), or a new run."""
    recorded = folder.results()
    out = Plan()
    workflow, batch_dir = str(wf.path.resolve()), folder.root.resolve()  # once, not per item
    for item in items:
        result = recorded.get(item.id)
        if result is not None and result.status in FINAL and (result.ok or not retry_failed):
            out.before[item.id] = result
            continue
        run_dir = batch_dir / folder.run_dir(item.id).relative_to(folder.root)
        # a folder stopped before its first event starts afresh (Workflow.run takes it over)
        resume = run_dir.is_dir() and (run_dir / "events.jsonl").is_file() and not never_started(run_dir)
        if resume:
            out.prior_cost[item.id] = _recorded_cost(run_dir)
        out.jobs.append(
            Job(
                item_id=item.id,
                line=item.line,
                inputs=item.inputs,
                workflow=workflow,
                batch_dir=str(batch_dir),
                run_dir=str(run_dir),
                resume=resume,
                options=options,
            )
        )
    return out


def _recorded_cost(run_dir: Path) -> float:
    return sum(
        float(e.get("cost_usd") or 0.0)
        for e in read_lines(run_dir / "events.jsonl")
        if e.get("type") == "model_response"
    )


def check_prices(wf: Workflow, options: RunOptions) -> list[str]:
    """A cost budget counts what it can price: the models that have neither a `price:` nor an
    entry in the bundled price table, each said once (a warning on the `flowrun.batch` logger,
    and returned); the batch runs all the same."""
    from flowrun.providers.prices import price_source

    if options.dry_run:
        raise UsageError("a cost budget has nothing to count in a dry run", "drop --dry-run or the budget")
    wf.check_models(options)
    choice = ModelChoice(
        wf.project,
        dict(wf.spec.models),
        wf.spec.default_model,
        wf.path.parent.resolve(),
        override=options.model,
        per_agent=dict(options.agent_models),
    )
    unpriced: list[str] = []
    for name in sorted(run_agents(wf.spec, wf.project)):
        agent = wf.project.agents[name].spec
        for ref in [agent.model, *agent.selectable_models]:
            config = choice.config(ref, name)
            said = f"model '{config.name}' (agent '{name}')"
            if price_source(config) == "unknown" and not any(
                u.startswith(f"model '{config.name}'") for u in unpriced
            ):
                unpriced.append(said)
                logging.getLogger("flowrun.batch").warning(
                    "%s has no price and the price table does not know it: the cost budget counts none "
                    "of its calls; add `price: {input: ..., output: ...}` (USD per million tokens) to it",
                    said,
                )
    return unpriced


# ---------------------------------------------------------------- the whole batch


async def execute(
    wf: Workflow,
    items: list[Item],
    folder: BatchFolder,
    backend: Backend,
    *,
    options: RunOptions,
    retry_failed: bool,
    max_cost_usd: float | None,
    on_progress: OnProgress | None,
) -> BatchSummary:
    the_plan = plan(wf, items, folder, options, retry_failed)
    tally = Tally(folder, len(items), the_plan.before, the_plan.prior_cost, max_cost_usd, on_progress)
    tally._check_budget()
    tally._changed()
    status = "cancelled"
    try:
        if not tally.stop.is_set():
            await backend.run(the_plan.jobs, tally)
        status = _status(tally)
    finally:
        folder.compact([item.id for item in items])
    return _summary(folder, tally, status, len(the_plan.jobs))


def _status(tally: Tally) -> str:
    if tally.stop_reason is not None:
        return "budget_exceeded"
    if len(tally.results) + len(tally.waiting) < tally.total:
        return "interrupted"  # items lost with a worker (a stop of the batch raises instead)
    if tally.waiting:
        return "waiting"
    return "completed" if all(r.ok for r in tally.results.values()) else "failed"


def _summary(folder: BatchFolder, tally: Tally, status: str, planned: int) -> BatchSummary:
    final = list(tally.results.values())
    latest = folder.results()
    waiting = sum(1 for r in latest.values() if r.status == "waiting")
    stopped = sum(1 for r in latest.values() if r.status not in FINAL) - waiting
    return BatchSummary(
        folder=folder.root,
        status=status,
        exit_code=exit_code(status),
        total=tally.total,
        completed=sum(1 for r in final if r.ok),
        failed=sum(1 for r in final if not r.ok),
        stopped=stopped,
        pending=tally.total - len(final) - stopped - waiting,
        ran=tally.ran,
        total_tokens=sum(r.total_tokens for r in latest.values()),
        cost_usd=tally.total_cost,
        results=folder.root / "results.jsonl",
        message=tally.stop_reason or "",
        waiting=waiting,
    )


def options_record(options: RunOptions, **extra: object) -> dict[str, object]:
    """The options as batch.json records them: each item's run options (as its run.json's
    `options`), then the batch's own."""
    return {**options.to_dict(), **extra}
