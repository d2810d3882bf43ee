"""What an earlier attempt of a run recorded, so `resume` and `replay` re-use it instead of
asking a model again or re-doing a tool call. Keys are deterministic: agent instance ids are paths
built from tool-call ids, and each instance numbers its model calls."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from flowrun.errors import FlowrunError
from flowrun.runtime.events import read_events
from flowrun.types import ModelResponse, ToolError, ToolResult

Mode = Literal["resume", "replay"]
# tools whose recorded result is used on replay instead of running them again (network, humans)
RECORDED_ONLY = frozenset({"web_search", "visit_url", "ask_user"})
# events that repeat work already logged; a resumed run does not write them twice
REPEATABLE = frozenset(
    {
        "run_start",
        "agent_start",
        "agent_end",
        "model_request",
        "model_response",
        "tool_call",
        "tool_result",
        "iteration_start",
        "iteration_end",
        "context_reset",
        "context_compacted",
    }
)


class Divergence(FlowrunError):
    """A replayed run asked for something the recording does not have."""


def event_key(event: dict[str, Any]) -> tuple[Any, ...]:
    return (
        event.get("type"),
        event.get("agent_id"),
        event.get("step"),
        event.get("call_id"),
        event.get("loop"),
        event.get("iteration"),
        event.get("purpose"),
    )


@dataclass
class Ledger:
    mode: Mode
    responses: dict[tuple[str, int], tuple[str, dict[str, Any]]] = field(default_factory=dict)
    requests: dict[tuple[str, int], str] = field(default_factory=dict)
    tool_results: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    until: dict[tuple[str, int], bool] = field(default_factory=dict)
    recorded: Counter[tuple[Any, ...]] = field(default_factory=Counter)
    emitted: Counter[tuple[Any, ...]] = field(default_factory=Counter)
    diverged: set[str] = field(default_factory=set)  # agent ids that went live after a mismatch

    @classmethod
    def from_events(cls, path: Path, mode: Mode) -> Ledger:
        ledger = cls(mode)
        for event in read_events(path):
            ledger.recorded[event_key(event)] += 1
            kind = event.get("type")
            if kind == "model_request":
                ledger.requests[(event["agent_id"], event["step"])] = event.get("digest", "")
            elif kind == "model_response":
                key = (event["agent_id"], event["step"])
                ledger.responses[key] = (ledger.requests.get(key, ""), event["response"])
            elif kind == "tool_result":
                ledger.tool_results[(event["agent_id"], event["call_id"])] = event["result"]
            elif kind == "iteration_end":
                ledger.until[(event["loop"], event["iteration"])] = bool(event.get("until_met"))
        return ledger

    def response(self, agent_id: str, step: int, digest: str, agent: str) -> ModelResponse | None:
        """The recorded answer to this model call; None to go live (resume only)."""
        if agent_id in self.diverged:
            return None
        found = self.responses.get((agent_id, step))
        if found is None:
            if self.mode == "replay":
                raise Divergence(
                    f"first differing step: agent '{agent}' ({agent_id}) model call {step} "
                    "is not in the recording",
                    "the configuration changed so the run took another path",
                )
            return None
        recorded_digest, raw = found
        if recorded_digest and recorded_digest != digest:
            if self.mode == "replay":
                raise Divergence(
                    f"first differing step: agent '{agent}' ({agent_id}) model call {step}: "
                    "the request differs from the recorded one (prompt, tools or history changed)",
                    "the configuration changed since the run was recorded",
                )
            self.diverged.add(agent_id)
            return None
        return ModelResponse.from_dict(raw)

    def tool_result(self, agent_id: str, call_id: str) -> ToolResult | None:
        if agent_id in self.diverged:
            return None
        raw = self.tool_results.get((agent_id, call_id))
        return result_from_dict(raw) if raw is not None else None

    def should_write(self, event: dict[str, Any]) -> bool:
        """On resume, an event the log already holds is not written again."""
        if self.mode != "resume" or event.get("type") not in REPEATABLE:
            return True
        key = event_key(event)
        self.emitted[key] += 1
        return self.emitted[key] > self.recorded[key]


def result_from_dict(raw: dict[str, Any]) -> ToolResult:
    error = raw.get("error")
    return ToolResult(
        status=raw["status"],
        text=raw.get("text", ""),
        data=raw.get("data") or {},
        error=ToolError(**error) if error else None,
        stats=raw.get("stats") or {},
        context=raw.get("context") or {},
    )
