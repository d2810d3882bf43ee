"""`flowrun eval --record`: keep every case's run as a cassette (as `flowrun record` does: its
event log, run.json, usage.json and output) and every judge's answer, for `--offline`
(evals/cassettes.py has the layout)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from flowrun.evals.evalset import EvalSet, cassette_folder, run_id
from flowrun.evals.report import EvalReport
from flowrun.testing import save_cassette

INDEX = "index.json"
JUDGES = "judges.jsonl"


def record(
    evalset: EvalSet, report: EvalReport, out: Path, answers: list[dict[str, object]], output: str | None
) -> Path:
    """Keep the eval's runs and judges' answers as its cassettes (replacing an older recording)."""
    folder = cassette_folder(evalset)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    runs = []
    for variant in report.variants:
        for run in variant.runs:
            relative = f"{variant.name}/{run_id(run.case, run.repeat)}"
            save_cassette(Path(run.run_dir), folder / relative, output)
            runs.append(
                {"variant": variant.name, "case": run.case, "repeat": run.repeat, "cassette": relative}
            )
    index = {
        "evalset": evalset.spec.name,
        "repeat": report.repeat,
        "recorded": time.time(),
        "variants": [{"name": v.name, "model": v.model, "overrides": v.overrides} for v in report.variants],
        "runs": runs,
    }
    (folder / INDEX).write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    (folder / JUDGES).write_text(
        "".join(json.dumps(a, ensure_ascii=False) + "\n" for a in answers), encoding="utf-8"
    )
    return folder
