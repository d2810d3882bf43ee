"""An eval from start to end: the eval set's cases run as a batch per variant (batch/: local
tasks, worker processes or Ray, `concurrency` at once; each case's run a normal run folder of
OUT/VARIANT/runs/CASE.rN), then every run is graded, judges included, into an EvalReport.
Offline, each recorded run is replayed from its cassette instead (no model, no server) and the
judges' recorded answers are used (evals/cassettes.py)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from flowrun import api
from flowrun.batch import BatchProgress, run_batch
from flowrun.batch.folder import NOT_STARTED, BatchFolder
from flowrun.errors import UsageError
from flowrun.evals.evalset import Case, EvalSet, load_evalset, run_id
from flowrun.evals.grader_kinds import grade
from flowrun.evals.graders.judge import JudgeGrader
from flowrun.evals.grading import GraderScore
from flowrun.evals.judges import JudgePanel, judge_variables
from flowrun.evals.outcome import Outcome, read_outcome
from flowrun.evals.recording import record
from flowrun.evals.report import EvalReport, RunScore, VariantReport
from flowrun.paths import claim_folder
from flowrun.runtime.options import RunOptions
from flowrun.tools.sandbox import Mode

DEFAULT_VARIANT = "default"


@dataclass(frozen=True, slots=True)
class Variant:
    """One way of running every case: a model and `--set` overrides over the workflow's."""

    name: str
    model: str | None = None
    overrides: tuple[str, ...] = ()


@dataclass
class EvalSettings:
    """How an eval runs (the options of `flowrun eval`)."""

    variants: list[Variant] = field(default_factory=list)  # none: one, of `model` and `overrides`
    model: str | None = None  # every variant's model, unless the variant names its own
    overrides: tuple[str, ...] = ()  # every variant's `--set`s, before the variant's own
    repeat: int | None = None  # None: the eval set's `repeat`
    concurrency: int = 4
    out: Path | None = None
    dry_run: bool = False
    sandbox: Mode | None = None
    min_score: float | None = None  # None: the eval set's
    grader_min: dict[str, float] = field(default_factory=dict)  # over the graders' own min_score
    record: bool = False
    backend: str = "local"
    address: str | None = None
    # local backend: None runs every case in this process, beside the judges (worker processes
    # cost more to start than an eval of a few hundred runs gains from them); N or "auto" as batch
    processes: int | Literal["auto"] | None = None
    on_progress: Callable[[str, BatchProgress], None] | None = None  # (variant, progress)


def default_out(evalset: EvalSet) -> Path:
    """A new folder, `evals/NAME-TIMESTAMP`, made here: an eval started in the same second as
    another (two CI jobs, or one right after another) gets `-2`, `-3`, ... rather than resuming
    the other's runs (`mkdir` claims a name: two at once never share one)."""
    first = Path("evals") / f"{evalset.spec.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    first.parent.mkdir(parents=True, exist_ok=True)
    return claim_folder(lambda n: first if n == 1 else first.with_name(f"{first.name}-{n}"))


def variants_of(settings: EvalSettings) -> list[Variant]:
    given = settings.variants or [Variant(DEFAULT_VARIANT)]
    names = [v.name for v in given]
    if len(set(names)) != len(names):
        raise UsageError("two variants have the same name", "give each --variant NAME=... its own name")
    return [Variant(v.name, v.model or settings.model, (*settings.overrides, *v.overrides)) for v in given]


async def run_eval(path: str | Path, settings: EvalSettings | None = None) -> EvalReport:
    """Run every case of the eval set at `path` (per variant, `repeat` times) and grade the runs."""
    settings = settings or EvalSettings()
    evalset = load_evalset(path)
    if settings.concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1, got {settings.concurrency}")
    repeat = settings.repeat or evalset.spec.repeat
    if repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {repeat}")
    variants = variants_of(settings)
    workflow = api.load(evalset.workflow_path)
    if "id" in workflow.inputs:
        raise UsageError(
            f"workflow '{workflow.name}' has an input named `id`",
            "flowrun eval names each run by its case id: rename the input",
        )
    panel = JudgePanel(workflow, evalset.here, dry_run=settings.dry_run, concurrency=settings.concurrency)
    panel.check(evalset.judges())
    out = (settings.out or default_out(evalset)).resolve()
    report = new_report(evalset, settings, out, repeat)
    try:
        for variant in variants:
            graded = await _run_variant(evalset, workflow, variant, repeat, out, settings, panel)
            report.variants.append(graded)
    finally:
        await panel.aclose()
    finish_report(report, panel, out)
    if settings.record:
        record(evalset, report, out, panel.answers, workflow.spec.output)
    return report


def new_report(evalset: EvalSet, settings: EvalSettings, out: Path, repeat: int) -> EvalReport:
    return EvalReport(
        evalset=evalset.spec.name,
        file=str(evalset.path),
        workflow=str(evalset.workflow_path),
        repeat=repeat,
        folder=str(out),
        min_score=settings.min_score if settings.min_score is not None else evalset.spec.min_score,
        grader_min={**evalset.grader_min(), **settings.grader_min},
        created=time.time(),
    )


def finish_report(report: EvalReport, panel: JudgePanel, out: Path) -> None:
    report.judge_cost_usd = panel.cost_usd()
    out.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(a, ensure_ascii=False) + "\n" for a in panel.answers)
    (out / "judges.jsonl").write_text(lines, encoding="utf-8")
    report.write(out / "report.json")


@dataclass(frozen=True, slots=True)
class CaseRun:
    case: Case
    repeat: int
    run_dir: Path
    duration_s: float = 0.0  # as the batch timed it (the run's log says, when it has one)
    note: str = ""  # what a replay found (a divergence), when it differs from the run's own message
    recorded_s: float | None = None  # offline: the recorded run's wall time, not its replay's


async def _run_variant(
    evalset: EvalSet,
    workflow: api.Workflow,
    variant: Variant,
    repeat: int,
    out: Path,
    settings: EvalSettings,
    panel: JudgePanel,
) -> VariantReport:
    """Every case of the eval set run `repeat` times as one batch, each run graded as soon as
    it ends: its judges' calls overlap the runs still going, instead of all waiting for the
    slowest run of the batch."""
    planned = {run_id(case.id, n): (case, n) for case in evalset.cases for n in range(1, repeat + 1)}
    items = _items_file(out / "items" / f"{variant.name}.jsonl", planned)
    options = variant_options(evalset, variant, settings, out)
    runs = out / variant.name / "runs"
    declared = workflow.spec.output
    grading: dict[str, asyncio.Task[RunScore]] = {}

    def graded(rid: str, duration_s: float) -> None:
        case, n = planned[rid]
        run = CaseRun(case, n, runs / rid, duration_s)
        grading[rid] = asyncio.create_task(grade_run(evalset, variant.name, run, panel, declared))

    def on_progress(progress: BatchProgress) -> None:
        last = progress.last
        if last is not None and last.id in planned and last.id not in grading and last.status != NOT_STARTED:
            graded(last.id, last.duration_s)
        if settings.on_progress is not None:
            settings.on_progress(variant.name, progress)

    try:
        summary = await run_batch(
            workflow,
            items,
            options,
            out=out / variant.name,
            concurrency=min(settings.concurrency, evalset.spec.concurrency or settings.concurrency),
            backend=settings.backend,
            address=settings.address,
            processes=1 if settings.processes is None and settings.backend == "local" else settings.processes,
            on_progress=on_progress,
        )
        # runs that did not end in this batch (done by an earlier one into the same folder, or
        # never started) are graded from what their folders hold
        results = BatchFolder(summary.folder).results()
        for rid in planned:
            if rid not in grading:
                graded(rid, results[rid].duration_s if rid in results else 0.0)
        scored = await asyncio.gather(*(grading[rid] for rid in planned))
    finally:
        for task in grading.values():
            task.cancel()
        await asyncio.gather(*grading.values(), return_exceptions=True)
    return VariantReport(variant.name, variant.model, list(variant.overrides), list(scored))


def variant_options(evalset: EvalSet, variant: Variant, settings: EvalSettings, out: Path) -> RunOptions:
    """How each run of a variant runs; with `memory: fresh`, every memory in the eval's folder."""
    fresh = out / variant.name / "memory" if evalset.spec.memory == "fresh" else None
    return RunOptions(
        model=variant.model,
        overrides=variant.overrides,
        dry_run=settings.dry_run,
        sandbox=settings.sandbox,
        memory_dir=fresh,
    )


def _items_file(path: Path, planned: Mapping[str, tuple[Case, int]]) -> Path:
    """The batch's items: one line per planned run, its id and its case's inputs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        json.dumps({"id": rid, **case.inputs}, ensure_ascii=False, default=str)
        for rid, (case, _) in planned.items()
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


async def grade_run(
    evalset: EvalSet, variant: str, run: CaseRun, panel: JudgePanel, declared: str | None
) -> RunScore:
    """Every grader of the run's case on what the run left. The run's files are read and the
    deterministic graders scored in a worker thread (a slow disk holds up this run only, not the
    runs still going on the loop); its judges are asked at once."""
    case = run.case
    outcome, by_rule = await asyncio.to_thread(_graded_by_rule, evalset, run, declared)
    judged = judge_variables(outcome, case.id, case.inputs, case.expected)
    judges = [
        panel.grade(grader, name, judged, (variant, case.id, run.repeat, name))
        for grader, name in case.graders
        if isinstance(grader, JudgeGrader)
    ]
    verdicts = iter(await asyncio.gather(*judges))
    scores = [score if score is not None else next(verdicts) for score in by_rule]
    weight = sum(s.weight for s in scores)
    score = (
        sum(s.score * s.weight for s in scores) / weight
        if weight
        else (1.0 if outcome.status == "completed" else 0.0)
    )
    message = run.note or ("" if outcome.status == "completed" else outcome.message)
    return RunScore(
        case=case.id,
        repeat=run.repeat,
        run_dir=str(run.run_dir),
        status=outcome.status,
        score=score,
        passed=all(s.passed for s in scores) if scores else outcome.status == "completed",
        graders=scores,
        cost_usd=outcome.cost_usd,
        steps=outcome.steps,
        duration_s=outcome.seconds if outcome.seconds is not None else run.duration_s,
        message=message.splitlines()[0][:500] if message else "",
        total_tokens=outcome.total_tokens,
    )


def _graded_by_rule(
    evalset: EvalSet, run: CaseRun, declared: str | None
) -> tuple[Outcome, list[GraderScore | None]]:
    """The run's outcome and its deterministic graders' scores (None in a judge's place)."""
    outcome = read_outcome(run.run_dir, declared)
    if run.recorded_s is not None:
        outcome.seconds = run.recorded_s
    case = run.case
    variables: Mapping[str, object] = {"inputs": case.inputs, "expected": case.expected, "case": case.id}
    scores = [
        None if isinstance(grader, JudgeGrader) else grade(grader, name, outcome, variables, evalset.here)
        for grader, name in case.graders
    ]
    return outcome, scores
