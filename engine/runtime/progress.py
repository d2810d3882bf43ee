"""Progress lines on stderr, read from the event stream (the loop itself prints nothing)."""

from __future__ import annotations

import sys
from typing import Any


def _short(value: Any, limit: int = 80) -> str:
    text = str(value).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def attach_progress(run: Any, verbosity: int) -> None:
    if verbosity < 0:
        return

    def show(event: dict[str, Any]) -> None:
        kind = event["type"]
        agent = event.get("agent", "")
        line = None
        if kind == "agent_start":
            line = f"▶ {agent} started ({event.get('model')}): {_short(event.get('task', ''), 60)}"
        elif kind == "agent_end":
            line = f"■ {agent} {event.get('status')} after {event.get('steps', '?')} step(s)"
        elif kind == "tool_call":
            line = f"  {agent} → {event['tool']}({_short(event.get('arguments', ''), 60)})"
        elif kind == "tool_result" and (verbosity > 0 or event["result"]["status"] == "error"):
            result = event["result"]
            line = f"  {agent} ← {event['tool']}: {result['status']} {_short(result['text'], 70)}"
        elif kind == "model_response" and verbosity > 0:
            usage = event["response"]["usage"]
            line = (
                f"  {agent} model step {event['step']}: {usage['input_tokens']} in / "
                f"{usage['output_tokens']} out, {event['latency_ms']} ms"
            )
        elif kind in ("error", "budget_exceeded", "context_reset", "iteration_start"):
            line = (
                f"! {kind}: {_short({k: v for k, v in event.items() if k not in ('seq', 't', 'type')}, 120)}"
            )
        if line:
            print(line, file=sys.stderr, flush=True)

    run.subscribers.append(show)
