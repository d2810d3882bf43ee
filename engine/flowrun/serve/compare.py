"""Two runs side by side (`GET /v1/compare?a=RUN&b=RUN`, the web UI's /compare page): each one's
state, cost, tokens and time, the same per agent, and their model steps paired by agent
instance and step with the first whose answers differ (two runs of one workflow, a run and its
re-run, or an eval's variants on one case: serve/eval_folders.py). Read from the runs' summaries
(runtime/summary/)."""

from __future__ import annotations

from flowrun.runtime.summary.folder import RunSummary, compare_steps
from flowrun.runtime.summary.per_agent import agent_rows
from flowrun.serve.served_runs import ServedRuns


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
    """Per agent name: its invocations, model calls, tokens, cost and time (the summary's)."""
    return {str(row["agent"]): row for row in agent_rows(summary.fold, summary.unfinished())}
