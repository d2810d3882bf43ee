"""Evaluation: `flowrun eval EVALSET.yaml` and `flowrun.evals.run_eval`, cases graded per variant.

    from flowrun.evals import EvalSettings, Variant, run_eval, run_offline

    report = await run_eval("evals/research.eval.yaml", EvalSettings(repeat=3, concurrency=8))
    print(report.ok, [(v.name, v.score, v.pass_at_k) for v in report.variants])
    report = await run_offline("evals/research.eval.yaml")   # from a `record=True` recording

An eval set (`kind: evalset`, manifest/eval_specs.py) names a workflow, its cases and their
graders; the cases run through the batch machinery (evals/runner.py), the runs are graded
(each grader's module in evals/graders/, registered in evals/grader_kinds.py; judges:
evals/judges.py) into a report (evals/report.py) that the CLI prints as a table, JSON, JUnit or
HTML (evals/formats.py); evals/cassettes.py records and replays. The names below are imported
on first use, so reading an eval set (the graders) does not import the runner and the API."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flowrun.evals.cassettes import run_offline
    from flowrun.evals.evalset import EvalSet, load_evalset
    from flowrun.evals.recording import record
    from flowrun.evals.report import EvalReport, RunScore, VariantReport, compare, read_report
    from flowrun.evals.runner import EvalSettings, Variant, run_eval

_EXPORTS = {
    "run_offline": "flowrun.evals.cassettes",
    "EvalSet": "flowrun.evals.evalset",
    "load_evalset": "flowrun.evals.evalset",
    "record": "flowrun.evals.recording",
    "EvalReport": "flowrun.evals.report",
    "RunScore": "flowrun.evals.report",
    "VariantReport": "flowrun.evals.report",
    "compare": "flowrun.evals.report",
    "read_report": "flowrun.evals.report",
    "EvalSettings": "flowrun.evals.runner",
    "Variant": "flowrun.evals.runner",
    "run_eval": "flowrun.evals.runner",
}

__all__ = [
    "EvalReport",
    "EvalSet",
    "EvalSettings",
    "RunScore",
    "Variant",
    "VariantReport",
    "compare",
    "load_evalset",
    "read_report",
    "record",
    "run_eval",
    "run_offline",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'flowrun.evals' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
