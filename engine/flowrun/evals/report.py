"""An eval's results: every run's grader scores, wall time, model calls, tokens and cost per
variant, what they add up to (per case: the mean over repeats, its spread, pass@k, the mean
time, calls, tokens and cost of a run; per variant: the overall score, pass@1, pass@k, each
grader's mean, the time, calls, tokens and cost of all its runs), the gates that set the exit
code, a comparison with a baseline report, and the JSON form (`--json`, `report.json`; a later
`--baseline` reads it back)."""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path

from flowrun.errors import UsageError
from flowrun.evals.grading import GraderScore
from flowrun.types import decode_json

REPORT_VERSION = 1
SAME = 1e-6  # score changes smaller than this are no change


@dataclass(slots=True)
class RunScore:
    """One run of one case (one repeat) and how its graders scored it."""

    case: str
    repeat: int  # 1-based
    run_dir: str  # the run folder (its transcript: `flowrun show --messages RUN_DIR`)
    status: str
    score: float  # the graders' weighted mean
    passed: bool  # every grader reached its pass mark
    graders: list[GraderScore] = field(default_factory=list)
    cost_usd: float | None = None
    steps: int = 0  # model calls over all agents
    duration_s: float = 0.0  # wall time
    message: str = ""  # what went wrong, when the run did not complete
    total_tokens: int = 0


@dataclass(frozen=True, slots=True)
class CaseSummary:
    case: str
    runs: int
    mean: float
    low: float
    high: float
    stdev: float  # over the repeats (0 for one run)
    passes: int  # runs that passed
    judges: float | None  # the mean of the judges' scores, when the case has judges
    # a run's mean wall time, model calls, tokens and cost (None: no run of it has a price)
    duration_s: float = 0.0
    steps: float = 0.0
    total_tokens: float = 0.0
    cost_usd: float | None = None

    @property
    def pass_at_k(self) -> bool:
        """At least one of the k runs passed."""
        return self.passes > 0

    @property
    def pass_all(self) -> bool:
        """Every one of the k runs passed (pass^k)."""
        return self.passes == self.runs


@dataclass(slots=True)
class VariantReport:
    name: str
    model: str | None = None
    overrides: list[str] = field(default_factory=list)
    runs: list[RunScore] = field(default_factory=list)

    def cases(self) -> list[CaseSummary]:
        by_case: dict[str, list[RunScore]] = {}
        for run in self.runs:
            by_case.setdefault(run.case, []).append(run)
        out = []
        for case, runs in by_case.items():
            scores = [r.score for r in runs]
            judged = [g.score for r in runs for g in r.graders if g.kind == "judge"]
            out.append(
                CaseSummary(
                    case=case,
                    runs=len(runs),
                    mean=statistics.fmean(scores),
                    low=min(scores),
                    high=max(scores),
                    stdev=statistics.pstdev(scores) if len(scores) > 1 else 0.0,
                    passes=sum(r.passed for r in runs),
                    judges=statistics.fmean(judged) if judged else None,
                    duration_s=statistics.fmean(r.duration_s for r in runs),
                    steps=statistics.fmean(r.steps for r in runs),
                    total_tokens=statistics.fmean(r.total_tokens for r in runs),
                    cost_usd=_mean_cost(runs),
                )
            )
        return out

    @property
    def score(self) -> float:
        """The mean of the cases' mean scores."""
        cases = self.cases()
        return statistics.fmean(c.mean for c in cases) if cases else 0.0

    @property
    def pass_at_1(self) -> float:
        return sum(r.passed for r in self.runs) / len(self.runs) if self.runs else 0.0

    @property
    def pass_at_k(self) -> float:
        cases = self.cases()
        return sum(c.pass_at_k for c in cases) / len(cases) if cases else 0.0

    @property
    def spread(self) -> float:
        """The mean over cases of the spread (standard deviation) of their repeats' scores."""
        cases = self.cases()
        return statistics.fmean(c.stdev for c in cases) if cases else 0.0

    def grader_means(self) -> dict[str, float]:
        scores: dict[str, list[float]] = {}
        for run in self.runs:
            for grader in run.graders:
                scores.setdefault(grader.name, []).append(grader.score)
        return {name: statistics.fmean(values) for name, values in scores.items()}

    @property
    def cost_usd(self) -> float | None:
        """All its runs' cost (None: no run has a price)."""
        costs = [r.cost_usd for r in self.runs if r.cost_usd is not None]
        return round(sum(costs), 6) if costs else None

    @property
    def duration_s(self) -> float:
        """All its runs' wall time, added up (they may have run at once)."""
        return round(sum(r.duration_s for r in self.runs), 3)

    @property
    def steps(self) -> int:
        return sum(r.steps for r in self.runs)

    @property
    def total_tokens(self) -> int:
        return sum(r.total_tokens for r in self.runs)


def _mean_cost(runs: list[RunScore]) -> float | None:
    costs = [r.cost_usd for r in runs if r.cost_usd is not None]
    return statistics.fmean(costs) if costs else None


@dataclass(frozen=True, slots=True)
class Gate:
    """A threshold the exit code follows: the overall score or one grader's mean, per variant."""

    variant: str
    what: str  # "overall", or a grader's name
    need: float
    got: float

    @property
    def ok(self) -> bool:
        return self.got >= self.need - 1e-9


@dataclass(slots=True)
class EvalReport:
    evalset: str
    file: str  # the eval set file
    workflow: str
    repeat: int
    folder: str  # where the runs are
    variants: list[VariantReport] = field(default_factory=list)
    min_score: float | None = None  # the overall gate
    grader_min: dict[str, float] = field(default_factory=dict)  # per-grader gates
    offline: bool = False
    judge_cost_usd: float | None = None
    created: float = 0.0

    def gates(self) -> list[Gate]:
        out = []
        for variant in self.variants:
            if self.min_score is not None:
                out.append(Gate(variant.name, "overall", self.min_score, variant.score))
            means = variant.grader_means()
            for name, need in self.grader_min.items():
                if name in means:
                    out.append(Gate(variant.name, name, need, means[name]))
        return out

    @property
    def ok(self) -> bool:
        return all(g.ok for g in self.gates())

    def variant(self, name: str) -> VariantReport | None:
        return next((v for v in self.variants if v.name == name), None)

    def to_dict(self) -> dict[str, object]:
        return {
            "version": REPORT_VERSION,
            **{k: v for k, v in asdict(self).items() if k != "variants"},
            "ok": self.ok,
            "gates": [{**asdict(g), "ok": g.ok} for g in self.gates()],
            "variants": [
                {
                    **asdict(v),
                    "score": v.score,
                    "pass_at_1": v.pass_at_1,
                    "pass_at_k": v.pass_at_k,
                    "spread": v.spread,
                    "cost_usd": v.cost_usd,
                    "duration_s": v.duration_s,
                    "steps": v.steps,
                    "total_tokens": v.total_tokens,
                    "graders": v.grader_means(),
                    "cases": [
                        {**asdict(c), "pass_at_k": c.pass_at_k, "pass_all": c.pass_all} for c in v.cases()
                    ],
                }
                for v in self.variants
            ],
        }

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def read_report(path: Path) -> EvalReport:
    """A report written by `--json` (or an eval folder's report.json)."""
    try:
        raw = decode_json(path.read_text(encoding="utf-8"))
        variants = [
            VariantReport(
                v["name"],
                v.get("model"),
                list(v.get("overrides") or []),
                [
                    RunScore(**{**r, "graders": [GraderScore(**g) for g in r.get("graders", [])]})
                    for r in v.get("runs", [])
                ],
            )
            for v in raw["variants"]
        ]
        return EvalReport(
            evalset=raw["evalset"],
            file=raw.get("file", ""),
            workflow=raw.get("workflow", ""),
            repeat=int(raw.get("repeat", 1)),
            folder=raw.get("folder", ""),
            variants=variants,
            min_score=raw.get("min_score"),
            grader_min=dict(raw.get("grader_min") or {}),
            offline=bool(raw.get("offline")),
            judge_cost_usd=raw.get("judge_cost_usd"),
            created=float(raw.get("created") or 0.0),
        )
    except OSError as e:
        raise UsageError(f"cannot read the report {path}: {e.strerror or e}") from None
    except (ValueError, KeyError, TypeError) as e:
        raise UsageError(
            f"{path} is not a `flowrun eval --json` report ({e})", "give a report --json wrote"
        ) from None


# ---------------------------------------------------------------- baseline


@dataclass(frozen=True, slots=True)
class Change:
    variant: str
    case: str  # "" for the variant's overall score
    before: float | None  # None: the case is new
    after: float | None  # None: the case is gone

    @property
    def verdict(self) -> str:
        if self.before is None:
            return "new"
        if self.after is None:
            return "gone"
        if self.after > self.before + SAME:
            return "improved"
        if self.after < self.before - SAME:
            return "regressed"
        return "same"


def compare(report: EvalReport, baseline: EvalReport) -> list[Change]:
    """Each variant's overall score and cases against the baseline's variant of the same name
    (or its only variant)."""
    out: list[Change] = []
    for variant in report.variants:
        before = baseline.variant(variant.name) or (
            baseline.variants[0] if len(baseline.variants) == 1 else None
        )
        if before is None:
            continue
        out.append(Change(variant.name, "", before.score, variant.score))
        old = {c.case: c.mean for c in before.cases()}
        new = {c.case: c.mean for c in variant.cases()}
        for case in [*new, *(c for c in old if c not in new)]:
            out.append(Change(variant.name, case, old.get(case), new.get(case)))
    return out
