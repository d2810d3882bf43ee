"""The cost preview as the terminal and programs read it: text (`flowrun cost`, `flowrun run
--estimate`) or JSON (`--format json`), from `Workflow.cost_preview` and the runs folder's
history (runtime/models/history.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flowrun.api import Workflow
    from flowrun.manifest.ceiling import Ceiling, Preview
    from flowrun.runtime.models.history import History
    from flowrun.runtime.options import RunOptions


def estimate(
    wf: Workflow, options: RunOptions, inputs: dict[str, object], runs_dir: Path, fmt: str = "text"
) -> str:
    """The preview of a run of `wf`, as text or JSON."""
    from flowrun.api.cost_preview import preview_dict
    from flowrun.runtime.models.history import run_history

    found = wf.cost_preview(options, inputs)
    history = run_history(runs_dir, wf.name)
    if fmt == "json":
        return json.dumps(preview_dict(found, history), indent=2)
    return render(found, history, wf.path)


# ---------------------------------------------------------------- text


def money(usd: float) -> str:
    return "unbounded" if math.isinf(usd) else f"${usd:,.4f}" if usd < 1 else f"${usd:,.2f}"


def count(n: float) -> str:
    return "unbounded" if math.isinf(n) else f"{n:,.0f}"


def _cost(ceiling: Ceiling) -> str:
    if ceiling.unpriced and not ceiling.usd:
        return "unknown (no price for " + ", ".join(sorted(ceiling.unpriced)) + ")"
    text = money(ceiling.usd)
    if ceiling.unpriced:
        text += " + unknown (" + ", ".join(sorted(ceiling.unpriced)) + ")"
    return text


def render(found: Preview, history: History, path: Path) -> str:
    lines = [f"cost preview of {found.workflow} ({path}): worst cases, nothing sent", ""]
    lines.append("one model call at most (a full context window in, max_tokens out):")
    calls = {a.call.model: a.call for a in found.agents.values()}
    for name, call in sorted(calls.items()):
        price = money(call.usd) if call.usd is not None else "unknown (no price)"
        lines.append(f"  {name:<20} {call.input_tokens:>9,} in + {call.output_tokens:>7,} out  {price}")
    lines += ["", f"  {'agent':<20} {'its own calls':<28} with its sub-agents"]
    for agent in [name for name, _ in found.roots] + sorted(set(found.agents) - {n for n, _ in found.roots}):
        a = found.agents[agent]
        tree = f"{count(a.tree.calls)} calls, {_cost(a.tree)}" if a.subcalls else "-"
        own = f"{count(a.own.calls)} calls, {_cost(a.own)}"
        lines.append(f"  {agent:<20} {own:<28} {tree}")
    for a in found.agents.values():
        for sub in a.subcalls:
            times = (
                f"at most {sub.max_calls} calls" if sub.max_calls else "any number of calls (no max_calls)"
            )
            capped = ", ".join(f"{k} {v:g}" for k, v in sub.budget.items()) or "no per-call budget"
            each = f"{count(sub.per_call.calls)} model calls, {_cost(sub.per_call)}"
            lines.append(f"  {a.agent} -> {sub.agent}: {times}; each call ≤ {each} ({capped})")
    lines.append("")
    runs = ", ".join(f"{name} ×{count(n)}" if n != 1 else name for name, n in found.roots)
    lines.append(
        f"run ({runs}) before limits: {count(found.uncapped.calls)} model calls, {_cost(found.uncapped)}"
    )
    if found.limits:
        given = ", ".join(f"{k} {v:g}" for k, v in found.limits.items())
        lines.append(
            f"limits ({given}) cap it at: {count(found.capped.calls)} model calls, {_cost(found.capped)}"
        )
        if "max_cost_usd" in found.limits and found.dearest_call and found.dearest_call.usd:
            flight = money(found.dearest_call.usd)
            lines.append(f"  (max_cost_usd plus the call in flight when it is reached: {flight})")
    else:
        lines.append("no workflow limit caps it: set limits.max_cost_usd or max_total_steps")
    lines.append("")
    lines += _history_lines(history, found.workflow)
    return "\n".join(lines)


def _history_lines(history: History, workflow: str) -> list[str]:
    if not history.runs:
        return [f"earlier runs: none of {workflow} in {history.runs_dir}"]
    out = [f"earlier runs of {workflow} in {history.runs_dir}: {history.runs}"]
    spread = history.cost()
    if spread is not None:
        median, p90 = money(spread[0]), money(spread[1])
        out.append(f"  cost: median {median}, 90th percentile {p90} ({len(history.costs)} priced)")
    else:
        out.append("  cost: unknown (no run had a priced model)")
    duration = history.duration()
    if duration is not None:
        out.append(f"  duration: median {_seconds(duration[0])}, 90th percentile {_seconds(duration[1])}")
    return out


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 60 else f"{int(s // 60)} min {int(s % 60)} s"
