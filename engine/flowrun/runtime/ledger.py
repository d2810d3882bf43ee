"""What an earlier attempt of a run recorded, so `resume` and `replay` re-use it instead of
asking a model again or re-doing a tool call. Keys are deterministic: agent instance ids are paths
built from tool-call ids, and each instance numbers its model calls."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from flowrun.errors import FlowrunError
from flowrun.events import (
    AgentEndEvent,
    AgentPromptEvent,
    AgentStartEvent,
    ApprovalEvent,
    ContextCompactedEvent,
    ContextResetEvent,
    Event,
    FanoutEndEvent,
    FanoutStartEvent,
    IterationEndEvent,
    IterationStartEvent,
    ModelRequestEvent,
    ModelResponseEvent,
    OutputInvalidEvent,
    RunStartEvent,
    StepConditionEvent,
    ToolCallEvent,
    ToolIntentEvent,
    ToolResultEvent,
    UserMessageEvent,
)
from flowrun.runtime.event_log import read_events
from flowrun.types import ModelResponse, ToolResult

Mode = Literal["resume", "replay"]
# tools whose recorded result is used on replay instead of running them again (network, humans)
RECORDED_ONLY = frozenset({"web_search", "visit_url", "ask_user"})
# events that repeat work already logged; a resumed run does not write them twice
REPEATABLE: tuple[type[Event], ...] = (
    RunStartEvent,
    AgentStartEvent,
    AgentEndEvent,
    AgentPromptEvent,
    ModelRequestEvent,
    ModelResponseEvent,
    ToolCallEvent,
    ToolIntentEvent,
    ToolResultEvent,
    IterationStartEvent,
    IterationEndEvent,
    ContextResetEvent,
    ContextCompactedEvent,
    ApprovalEvent,
    UserMessageEvent,
    StepConditionEvent,
    FanoutStartEvent,
    FanoutEndEvent,
    OutputInvalidEvent,
)
EventKey = tuple[object, ...]


class Divergence(FlowrunError):
    """A replayed run asked for something the recording does not have."""


def event_key(event: Event) -> EventKey:
    return (
        event.type,
        getattr(event, "agent_id", None),
        getattr(event, "step", None),
        getattr(event, "call_id", None),
        getattr(event, "loop", None),
        getattr(event, "iteration", None),
        getattr(event, "purpose", None),
    )


@dataclass
class Ledger:
    mode: Mode
    responses: dict[tuple[str, int], tuple[str, ModelResponse]] = field(default_factory=dict)
    requests: dict[tuple[str, int], str] = field(default_factory=dict)
    tool_results: dict[tuple[str, str], ToolResult] = field(default_factory=dict)
    until: dict[tuple[str, int], bool] = field(default_factory=dict)
    approvals: dict[tuple[str, str], bool] = field(default_factory=dict)
    user_messages: dict[tuple[str, int], str] = field(default_factory=dict)  # (agent id, step) -> text
    tasks: dict[str, str] = field(default_factory=dict)  # agent id -> the task its agent_start recorded
    intents: set[tuple[str, str]] = field(default_factory=set)  # calls not safe to repeat that started
    conditions: dict[str, bool] = field(default_factory=dict)  # step id -> `if:` met
    recorded: Counter[EventKey] = field(default_factory=Counter)
    emitted: Counter[EventKey] = field(default_factory=Counter)
    diverged: set[str] = field(default_factory=set)  # agent ids that went live after a mismatch

    @classmethod
    def from_events(cls, path: Path, mode: Mode) -> Ledger:
        ledger = cls(mode)
        for event in read_events(path, strict=True):
            ledger.recorded[event_key(event)] += 1
            if isinstance(event, ModelRequestEvent):
                ledger.requests[(event.agent_id, event.step)] = event.digest
            elif isinstance(event, ModelResponseEvent):
                key = (event.agent_id, event.step)
                ledger.responses[key] = (ledger.requests.get(key, ""), event.response)
            elif isinstance(event, ToolResultEvent):
                ledger.tool_results[(event.agent_id, event.call_id)] = event.result
            elif isinstance(event, IterationEndEvent):
                ledger.until[(event.loop, event.iteration)] = event.until_met
            elif isinstance(event, ApprovalEvent):
                ledger.approvals[(event.agent_id, event.call_id)] = event.approved
            elif isinstance(event, UserMessageEvent):
                ledger.user_messages[(event.agent_id, event.step)] = event.text
            elif isinstance(event, AgentStartEvent):
                ledger.tasks.setdefault(event.agent_id, event.task)
            elif isinstance(event, ToolIntentEvent):
                ledger.intents.add((event.agent_id, event.call_id))
            elif isinstance(event, StepConditionEvent):
                ledger.conditions[event.step] = event.met
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
        recorded_digest, response = found
        if recorded_digest and recorded_digest != digest:
            if self.mode == "replay":
                raise Divergence(
                    f"first differing step: agent '{agent}' ({agent_id}) model call {step}: "
                    "the request differs from the recorded one (prompt, tools or history changed)",
                    "the configuration changed since the run was recorded",
                )
            self.diverged.add(agent_id)
            return None
        return ModelResponse.from_dict(response.to_dict())  # a fresh copy: the loop may edit it

    def tool_result(self, agent_id: str, call_id: str) -> ToolResult | None:
        if agent_id in self.diverged:
            return None
        recorded = self.tool_results.get((agent_id, call_id))
        return ToolResult.from_dict(recorded.to_dict()) if recorded is not None else None

    def started_unfinished(self, agent_id: str, call_id: str) -> bool:
        """True for a call not safe to repeat that an earlier attempt started and never
        finished (resume only): its effect is unknown, so it is not run again."""
        return (
            self.mode == "resume"
            and agent_id not in self.diverged
            and (agent_id, call_id) in self.intents
            and (agent_id, call_id) not in self.tool_results
        )

    def approval(self, agent_id: str, call_id: str) -> bool | None:
        """The decision an earlier attempt recorded for this call (resume never asks again)."""
        return self.approvals.get((agent_id, call_id))

    def should_write(self, event: Event) -> bool:
        """On resume, an event the log already holds is not written again."""
        if self.mode != "resume" or not isinstance(event, REPEATABLE):
            return True
        key = event_key(event)
        self.emitted[key] += 1
        return self.emitted[key] > self.recorded[key]
