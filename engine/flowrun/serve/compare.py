"""Two runs side by side (`GET /v1/compare?a=RUN&b=RUN`, the web UI's /compare page): each one's
state, cost, tokens and time, the same per agent, and their model steps paired by agent
instance and step with the first whose answers differ (two runs of one workflow, or an eval's
variants on one case). Read from the runs' summaries (runtime/summary/)."""

from __future__ import annotations

from flowrun.runtime.summary.fold import Invocation
from flowrun.runtime.summary.folder import RunSummary, compare_steps
from flowrun.serve.served_runs import ServedRuns

EMPTY_ROW: dict[str, object] = {"runs": 0, "steps": 0, "tokens": 0, "cost_usd": None, "time_s": 0.0}


def compare_runs(served: ServedRuns, first: str, second: str) -> dict[str, object]:
    a, b = served.summary(first), served.summary(second)
    per_agent: dict[str, dict[str, object]] = {
        name: {"agent": name, "a": None, "b": None} for name in [*_agents(a), *_agents(b)]
    }
    for side, summary in (("a", a), ("b", b)):
        for name, row in _agents(summary).items():
            per_agent[name][side] = row
    return {
        "a": _facts(first, a),
        "b": _facts(second, b),
        "agents": list(per_agent.values()),
        **compare_steps(a.entry.path, b.entry.path, requests=False),
    }


def _facts(run_id: str, summary: RunSummary) -> dict[str, object]:
    return {
        **summary.entry.to_dict(),
        "id": run_id,
        "inputs": summary.entry.inputs,
        "options": summary.entry.options,
        "message": summary.message or None,
        "tool_calls": summary.fold.tool_calls,
        "tool_errors": summary.fold.tool_errors,
    }


def _agents(summary: RunSummary) -> dict[str, dict[str, object]]:
    """Per agent name: its invocations, model calls, tokens, cost and time (summed)."""
    last = summary.fold.last_t or 0.0
    out: dict[str, dict[str, object]] = {}
    for inst in summary.fold.invocations:
        row = out.setdefault(inst.agent, dict(EMPTY_ROW))
        row["runs"] = _int(row["runs"]) + 1
        row["steps"] = _int(row["steps"]) + inst.steps
        row["tokens"] = _int(row["tokens"]) + inst.usage.total
        if inst.cost_usd is not None:
            row["cost_usd"] = _float(row["cost_usd"]) + inst.cost_usd
        row["time_s"] = _float(row["time_s"]) + _took(inst, last)
    return out


def _took(inst: Invocation, last: float) -> float:
    return max(0.0, (inst.end if inst.end is not None else last) - inst.start)


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0


def _float(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0
