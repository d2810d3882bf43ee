"""Evaluation: `flowrun eval EVALSET.yaml` and `flowrun.evals.run_eval`, cases graded per variant.

    from flowrun.evals import EvalSettings, Variant, run_eval, run_offline

    report = await run_eval("evals/research.eval.yaml", EvalSettings(repeat=3, concurrency=8))
    print(report.ok, [(v.name, v.score, v.pass_at_k) for v in report.variants])
    report = await run_offline("evals/research.eval.yaml")   # from a `record=True` recording

An eval set (`kind: evalset`, manifest/eval_specs.py) names a workflow, its cases and their
graders; the cases run through the batch machinery (evals/runner.py), the runs are graded
(evals/graders.py, evals/judges.py) into a report (evals/report.py) that the CLI prints as a
table, JSON, JUnit or HTML (evals/formats.py); evals/cassettes.py records and replays."""

from __future__ import annotations

from flowrun.evals.cassettes import run_offline
from flowrun.evals.evalset import EvalSet, load_evalset
from flowrun.evals.recording import record
from flowrun.evals.report import EvalReport, RunScore, VariantReport, compare, read_report
from flowrun.evals.runner import EvalSettings, Variant, run_eval

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
