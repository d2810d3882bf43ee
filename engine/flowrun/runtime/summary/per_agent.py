"""A run's totals per agent name and per model, from its fold: what the web UI's team graph,
its charts and the compare page show (`agents`, `usage.by_agent` and `usage.by_model` of
`GET /v1/runs/{id}`). Said here once so that no page sums invocations of its own."""

from __future__ import annotations

from collections.abc import Callable

from flowrun.runtime.summary.fold import Invocation, RunFold, UsageRow
from flowrun.types import Usage

# the state an agent name shows when its invocations differ: a live one first
LIVE_FIRST = {"running": 2, "waiting": 1}


def agent_rows(fold: RunFold, unfinished: str) -> list[dict[str, object]]:
    """Per agent name, in the order each first started: its state (running, then waiting, else
    its latest invocation's; `unfinished` for one that never ended), its invocations (`runs`),
    model steps, tokens, cost, time and the index of its first invocation."""
    last = fold.last_t or 0.0
    rows: dict[str, dict[str, object]] = {}
    for inst in fold.invocations:
        status = inst.status or unfinished
        row = rows.setdefault(inst.agent, _empty(inst, status))
        row["runs"] = _int(row["runs"]) + 1
        row["steps"] = _int(row["steps"]) + inst.steps
        row["total_tokens"] = _int(row["total_tokens"]) + inst.usage.total
        if inst.cost_usd is not None:
            row["cost_usd"] = _float(row["cost_usd"]) + inst.cost_usd
        row["time_s"] = _float(row["time_s"]) + _took(inst, last)
        if LIVE_FIRST.get(status, 0) >= LIVE_FIRST.get(str(row["status"]), 0):
            row["status"] = status
    return list(rows.values())


def usage_by(fold: RunFold, key: Callable[[UsageRow], str], name: str) -> list[dict[str, object]]:
    """The rows of `by_agent_model` summed per agent or per model (`key`), named `name`."""
    sums: dict[str, UsageRow] = {}
    for row in fold.by_agent_model.values():
        total = sums.setdefault(key(row), UsageRow(row.agent, row.model))
        total.usage = total.usage + row.usage
        total.calls += row.calls
        if row.cost_usd is not None:
            total.cost_usd = (total.cost_usd or 0.0) + row.cost_usd
    return [
        {name: k, "calls": r.calls, "usage": token_counts(r.usage), "cost_usd": r.cost_usd}
        for k, r in sums.items()
    ]


def token_counts(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
    }


def _empty(inst: Invocation, status: str) -> dict[str, object]:
    return {
        "agent": inst.agent,
        "status": status,
        "runs": 0,
        "steps": 0,
        "total_tokens": 0,
        "cost_usd": None,
        "time_s": 0.0,
        "first": inst.index,
    }


def _took(inst: Invocation, last: float) -> float:
    return max(0.0, (inst.end if inst.end is not None else last) - inst.start)


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0


def _float(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0
