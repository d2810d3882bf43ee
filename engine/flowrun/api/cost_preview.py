"""The cost preview as JSON (`flowrun cost --format json`, the web UI's start form through
`GET /v1/workflows/{name}/cost`): the worst case of a run from the manifests (manifest/ceiling.py,
`Workflow.cost_preview`) and the spread of the earlier runs of the workflow in the runs folder
(runtime/models/history.py); null where a figure is unbounded."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flowrun.api.workflow import Workflow
    from flowrun.manifest.ceiling import Ceiling, Preview
    from flowrun.runtime.models.history import History
    from flowrun.runtime.options import RunOptions


def cost_preview_json(
    wf: Workflow, options: RunOptions, inputs: dict[str, object], runs_dir: Path
) -> dict[str, object]:
    """The preview of a run of `wf` with `options` and `inputs`, and its history, as JSON."""
    from flowrun.runtime.models.history import run_history

    return preview_dict(wf.cost_preview(options, inputs), run_history(runs_dir, wf.name))


def _num(value: float) -> float | None:
    return None if math.isinf(value) else round(value, 6)


def _ceiling(c: Ceiling) -> dict[str, object]:
    return {
        "calls": _num(c.calls),
        "tokens": _num(c.tokens),
        "usd": _num(c.usd),
        "unpriced": sorted(c.unpriced),
    }


def preview_dict(found: Preview, history: History) -> dict[str, object]:
    """The preview as JSON (null: unbounded)."""
    agents: dict[str, object] = {}
    for name, a in found.agents.items():
        agents[name] = {
            "max_steps": a.max_steps,
            "call": {
                "model": a.call.model,
                "input_tokens": a.call.input_tokens,
                "output_tokens": a.call.output_tokens,
                "usd": a.call.usd,
            },
            "own": _ceiling(a.own),
            "tree": _ceiling(a.tree),
            "subcalls": [
                {
                    "agent": s.agent,
                    "max_calls": s.max_calls,
                    "budget": s.budget,
                    "per_call": _ceiling(s.per_call),
                    "total": _ceiling(s.total),
                }
                for s in a.subcalls
            ],
        }
    cost, duration = history.cost(), history.duration()
    return {
        "workflow": found.workflow,
        "roots": [{"agent": name, "times": _num(n)} for name, n in found.roots],
        "agents": agents,
        "uncapped": _ceiling(found.uncapped),
        "limits": found.limits,
        "capped": _ceiling(found.capped),
        "history": {
            "runs": history.runs,
            "priced_runs": len(history.costs),
            "cost_median": cost[0] if cost else None,
            "cost_p90": cost[1] if cost else None,
            "duration_median_s": duration[0] if duration else None,
            "duration_p90_s": duration[1] if duration else None,
        },
    }
