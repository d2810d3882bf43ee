"""An eval's recording, for CI without a key: `--record` keeps every case's run as a cassette
(as `flowrun record` does: its event log, run.json, usage.json and output) and every judge's
answer; `--offline` replays each cassette into a new run folder with the workflow as it is now
(no model, no server: a prompt or manifest edit that changes what an agent is asked shows as a
divergence) and grades it again, the judges answering from the recording.

    CASSETTES/ (the eval set's `cassettes:`, default cassettes/NAME next to it)
      index.json            the eval set, its repeat, the variants, one entry per run
      judges.jsonl          the judges' answers (case, repeat, judge, prompt digest, score, reason)
      VARIANT/CASE.rN/      each run's cassette"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Mapping
from pathlib import Path

from flowrun import api
from flowrun.errors import FlowrunError, UsageError
from flowrun.evals.evalset import Case, cassette_folder, load_evalset, run_id
from flowrun.evals.judges import JudgePanel, Key
from flowrun.evals.outcome import wall_time
from flowrun.evals.recording import INDEX, JUDGES
from flowrun.evals.report import EvalReport, RunScore, VariantReport
from flowrun.evals.runner import CaseRun, EvalSettings, finish_report, grade_run, new_report
from flowrun.runtime.durable.event_log import read_events
from flowrun.testing import cassette_meta
from flowrun.types import decode_json


def _index(folder: Path) -> dict[str, object]:
    try:
        raw = decode_json((folder / INDEX).read_text(encoding="utf-8"))
    except OSError:
        raise UsageError(
            f"no recording in {folder}",
            "record one with `flowrun eval EVALSET --record` (with a model, or --dry-run)",
        ) from None
    except ValueError as e:
        raise UsageError(f"{folder / INDEX} is damaged ({e})", "record the eval again") from None
    if not isinstance(raw, dict):
        raise UsageError(f"{folder / INDEX} is damaged", "record the eval again")
    return raw


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _answers(folder: Path) -> dict[Key, Mapping[str, object]]:
    out: dict[Key, Mapping[str, object]] = {}
    path = folder / JUDGES
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            raw = decode_json(line)
            out[(str(raw["variant"]), str(raw["case"]), int(raw["repeat"]), str(raw["judge"]))] = raw
        except (ValueError, KeyError, TypeError):
            continue
    return out


async def run_offline(path: str | Path, settings: EvalSettings | None = None) -> EvalReport:
    """Grade the eval set's recording again with no model: replay each case's cassette, answer
    the judges from the recorded answers."""
    settings = settings or EvalSettings()
    _refuse_live_options(settings)
    evalset = load_evalset(path)
    folder = cassette_folder(evalset)
    index = _index(folder)
    repeat = int(str(index.get("repeat") or 1))
    from flowrun.evals.runner import default_out

    out = (settings.out or default_out(evalset)).resolve()
    report = new_report(evalset, settings, out, repeat)
    report.offline = True
    workflow = api.load(evalset.workflow_path, prefetch=False)  # offline: nothing is sent
    load = WorkflowLoader(evalset.workflow_path)
    panel = JudgePanel(workflow, evalset.here, concurrency=settings.concurrency, recorded=_answers(folder))
    cases = {c.id: c for c in evalset.cases}
    gate = asyncio.Semaphore(settings.concurrency)
    recorded_variants = index.get("variants")
    for variant in _list(recorded_variants):
        if not isinstance(variant, dict):
            continue
        name = str(variant["name"])
        entries = [r for r in _list(index.get("runs")) if isinstance(r, dict) and r.get("variant") == name]
        missing = sorted({str(r["case"]) for r in entries} - set(cases))
        if missing:
            raise UsageError(
                f"the recording has case '{missing[0]}', which the eval set no longer has",
                "record the eval again",
            )

        async def replayed(entry: dict[str, object], name: str = name) -> RunScore:
            case, repeat = cases[str(entry["case"])], int(str(entry["repeat"]))
            target = out / name / "runs" / run_id(case.id, repeat)
            async with gate:
                run = await _replay(folder / str(entry["cassette"]), target, case, repeat, load, settings)
            return await grade_run(evalset, name, run, panel, workflow.spec.output)

        scored = await asyncio.gather(*(replayed(e) for e in entries))
        report.variants.append(
            VariantReport(name, variant.get("model"), list(variant.get("overrides") or []), list(scored))
        )
    finish_report(report, panel, out)
    return report


def _refuse_live_options(settings: EvalSettings) -> None:
    given = [
        flag
        for flag, value in (
            ("--variant", settings.variants),
            ("--model", settings.model),
            ("--set", settings.overrides),
            ("--repeat", settings.repeat),
            ("--dry-run", settings.dry_run),
            ("--record", settings.record),
        )
        if value
    ]
    if given:
        raise UsageError(
            f"--offline grades the recorded runs again: {given[0]} does not go with it",
            "drop it, or run without --offline",
        )


async def _replay(
    cassette: Path, target: Path, case: Case, repeat: int, load: WorkflowLoader, settings: EvalSettings
) -> CaseRun:
    events = cassette / "events.jsonl"
    started = time.monotonic()
    _fresh(target)
    note = ""
    try:
        meta = cassette_meta(events)
        options = api.replay_options(meta, sandbox=settings.sandbox)
        _, ledger = await api.replay_events(load(options.overrides), events, meta, target, options)
        if ledger.divergence is not None:
            note = f"the replay diverged from the recording: {ledger.divergence.message}"
    except FlowrunError as e:
        note = f"cannot replay {cassette}: {e.message}"
    # the time is the recorded run's, not its replay's
    recorded_s = wall_time(read_events(events)) if events.is_file() else None
    return CaseRun(case, repeat, target, round(time.monotonic() - started, 3), note, recorded_s)


def _fresh(target: Path) -> None:
    """An empty place for a replay (an earlier offline grading's folder is replaced)."""
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)


class WorkflowLoader:
    """The eval set's workflow with each recorded variant's overrides, loaded once each."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.loaded: dict[tuple[str, ...], api.Workflow] = {}

    def __call__(self, overrides: tuple[str, ...]) -> api.Workflow:
        if overrides not in self.loaded:
            self.loaded[overrides] = api.load(self.path, list(overrides), prefetch=False)
        return self.loaded[overrides]
