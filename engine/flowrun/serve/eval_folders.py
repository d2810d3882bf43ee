"""An eval's runs, for the web UI's compare (`GET /v1/evals`, `GET /v1/evals/{name}`): the eval
folders in `evals/` beside the runs folder (where `flowrun eval` writes evals/NAME-TIMESTAMP by
default), each variant's runs in VARIANT/runs/. The runs API reads a variant's run as
`EVAL:VARIANT:RUN`, and an eval's answer pairs each case's runs (CASE.rN) across its variants."""

from __future__ import annotations

from pathlib import Path

from flowrun.errors import UsageError
from flowrun.pinned import read_json_object
from flowrun.runtime.durable.run_folder import check_run_id
from flowrun.runtime.durable.runs_index import list_runs

EVALS = "evals"
RUNS = "runs"
REPORT = "report.json"


def evals_folder(runs_dir: Path) -> Path:
    return runs_dir.resolve().parent / EVALS


def variant_runs(runs_dir: Path, name: str, variant: str) -> Path | None:
    """The runs folder of an eval's variant (whether or not it exists); None for names that
    are no folder names."""
    try:
        check_run_id(name)
        check_run_id(variant)
    except UsageError:
        return None
    return evals_folder(runs_dir) / name / variant / RUNS


def eval_list(runs_dir: Path) -> list[dict[str, object]]:
    """The eval folders with runs, newest first: name, variants and when it last changed."""
    folder = evals_folder(runs_dir)
    if not folder.is_dir():
        return []
    found = [
        {"name": path.name, "variants": _variants(path), "updated": path.stat().st_mtime}
        for path in folder.iterdir()
        if path.is_dir() and _variants(path)
    ]
    return sorted(found, key=lambda e: float(str(e["updated"])), reverse=True)


def eval_exists(runs_dir: Path, name: str) -> bool:
    try:
        check_run_id(name)
    except UsageError:
        return False
    path = evals_folder(runs_dir) / name
    return path.is_dir() and bool(_variants(path))


def eval_detail(runs_dir: Path, name: str) -> dict[str, object] | None:
    """One eval: its variants (in its report's order) and, per run name (CASE.rN), each
    variant's run: its id for the runs API, state, tokens, cost and time. None when there is
    no such eval."""
    try:
        check_run_id(name)
    except UsageError:
        return None
    path = evals_folder(runs_dir) / name
    variants = _variants(path) if path.is_dir() else []
    if not variants:
        return None
    rows: dict[str, dict[str, object]] = {}
    for variant in variants:
        for entry in list_runs(path / variant / RUNS):
            rows.setdefault(entry.id, {})[variant] = {
                "id": f"{name}:{variant}:{entry.id}",
                "status": entry.status,
                "total_tokens": entry.total_tokens,
                "cost_usd": entry.cost_usd,
                "duration_s": entry.duration_s,
            }
    runs = [{"run": run, "variants": rows[run]} for run in sorted(rows)]
    return {"name": name, "variants": variants, "runs": runs}


def _variants(path: Path) -> list[str]:
    """The variants of an eval folder with runs: in its report's order, then the others."""
    have = sorted(p.name for p in path.iterdir() if (p / RUNS).is_dir())
    report = read_json_object(path / REPORT) if (path / REPORT).is_file() else {}
    listed = report.get("variants")
    named = [str(v.get("name")) for v in listed if isinstance(v, dict)] if isinstance(listed, list) else []
    return [v for v in named if v in have] + [v for v in have if v not in named]
