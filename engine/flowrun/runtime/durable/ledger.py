"""What an earlier attempt of a run recorded, so `resume` and `replay` re-use it instead of
asking a model again or re-doing a tool call. Keys are deterministic: agent instance ids are paths
built from tool-call ids, and each instance numbers its model calls."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal, TypeVar

from flowrun.errors import FlowrunError, ProviderError
from flowrun.events import (
    AgentEndEvent,
    AgentPromptEvent,
    AgentStartEvent,
    ApprovalEvent,
    CallBudgetExceededEvent,
    ContextCompactedEvent,
    ContextResetEvent,
    DecisionEvent,
    DecisionPendingEvent,
    ErrorEvent,
    Event,
    FanoutEndEvent,
    FanoutStartEvent,
    GuardrailEvent,
    HookEvent,
    IterationEndEvent,
    IterationStartEvent,
    ModelFallbackEvent,
    ModelRequestEvent,
    ModelResponseEvent,
    OutputInvalidEvent,
    RepeatedCallEvent,
    RunResumedEvent,
    RunStartEvent,
    StepConditionEvent,
    StepEvent,
    ToolCallEvent,
    ToolIntentEvent,
    ToolResultEvent,
    UserMessageEvent,
)
from flowrun.runtime.durable.decisions import one_attempt
from flowrun.runtime.durable.event_log import read_events
from flowrun.types import ModelResponse, ToolResult

Mode = Literal["resume", "replay"]
R = TypeVar("R", bound="KindRecord")
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
    ModelFallbackEvent,
    CallBudgetExceededEvent,
    DecisionPendingEvent,
    HookEvent,
    RepeatedCallEvent,
    GuardrailEvent,
    StepEvent,
)
EventKey = tuple[object, ...]


class Divergence(FlowrunError):
    """A replayed run asked for something the recording does not have, or asked it differently.
    `reason`: missing (no such call recorded), system (its system prompt differs), tools (its
    tools or their schemas differ), model (another model is asked), history (the conversation
    before it differs), unused (a recorded call the replay never made), condition (an `if:` or
    `until` decided otherwise)."""

    def __init__(
        self, message: str, hint: str, *, agent: str = "", agent_id: str = "", step: int = 0, reason: str = ""
    ) -> None:
        super().__init__(message, hint)
        self.agent = agent
        self.agent_id = agent_id
        self.step = step
        self.reason = reason


class RecordedFailure(ProviderError):
    """A replay reached a model call that failed for good in the recording: it fails the same
    way (so a cassette of a failed run replays to that failure)."""


@dataclass(frozen=True, slots=True)
class RequestPrint:
    """What a model request was besides its history: digests of the system prompt and of the
    tool schemas (None in logs written before they were recorded), and the tool names."""

    system: str | None = None
    tools: str | None = None
    tool_names: tuple[str, ...] = ()
    model: str | None = None  # `provider:model` of the model asked (None in older logs)


def _local_date(t: float) -> str | None:
    """The date a run written before `date` was recorded started on (local time, as `date`)."""
    return time.strftime("%Y-%m-%d", time.localtime(t)) if t else None


def _difference(recorded: RequestPrint | None, now: RequestPrint | None) -> str | None:
    if recorded is None or now is None:
        return None
    if recorded.system and now.system and recorded.system != now.system:
        return "system"
    if recorded.tools and now.tools and recorded.tools != now.tools:
        return "tools"
    if recorded.model and now.model and recorded.model != now.model:
        return "model"
    return None


def _what_differs(reason: str, recorded: RequestPrint | None, now: RequestPrint | None) -> str:
    if reason == "system":
        return "its system prompt differs from the recording"
    if reason == "tools":
        before, after = set(recorded.tool_names if recorded else ()), set(now.tool_names if now else ())
        changes = [
            f"{label}: {', '.join(sorted(names))}"
            for label, names in (("added", after - before), ("removed", before - after))
            if names
        ]
        return "its tools differ from the recording (" + ("; ".join(changes) or "their schemas changed") + ")"
    if reason == "model":
        then, later = (recorded.model if recorded else None), (now.model if now else None)
        return f"its model differs from the recording ({then} → {later})"
    return (
        "the conversation before it differs from the recording "
        "(a task, a tool result or an earlier answer changed)"
    )


def event_key(event: Event) -> EventKey:
    return (
        event.type,
        getattr(event, "agent_id", None),
        getattr(event, "step", None),
        getattr(event, "call_id", None),
        getattr(event, "loop", None),
        getattr(event, "iteration", None),
        getattr(event, "purpose", None),
        getattr(event, "attempt", None),  # a decision asked anew in the same place is another
    )


class KindRecord:
    """What one kind (a step kind, a tool kind) keeps of a recorded run for resume and replay,
    defined in the kind's own module: the events it folds in (`reads`) as the ledger reads the
    log. A kind lists its record classes in its `records` (runtime/kinds.kind_records gives them
    to `Ledger.from_events`) and reaches its record with `run.recorded(ThatClass)`; a new run's
    record has no ledger and holds nothing."""

    reads: ClassVar[tuple[type[Event], ...]] = ()

    def __init__(self, ledger: Ledger | None = None) -> None:
        self.ledger = ledger

    def add(self, event: Event) -> None:
        """Fold in one recorded event of a type in `reads`."""

    @property
    def replaying(self) -> bool:
        return self.ledger is not None and self.ledger.mode == "replay"


class RecordedConditions(KindRecord):
    """Conditions the recording decided (an `if:`, a loop's `until`), by where: a resume keeps
    each decision, a replay decides again and a different decision is a divergence."""

    def __init__(self, ledger: Ledger | None = None) -> None:
        super().__init__(ledger)
        self.met: dict[object, bool] = {}

    def kept(self, key: object) -> bool | None:
        """The decision a resume keeps; None: decide now (a new run, a replay, a new point)."""
        resuming = self.ledger is not None and self.ledger.mode == "resume"
        return self.met.get(key) if resuming else None

    def confirm(self, key: object, where: str, condition: str, met: bool) -> None:
        """A replay's decision against the recorded one: a Divergence when they differ."""
        if self.ledger is not None:
            self.ledger.check_decision(where, condition, self.met.get(key), met)


@dataclass
class Ledger:
    mode: Mode
    responses: dict[tuple[str, int], tuple[str, ModelResponse]] = field(default_factory=dict)
    requests: dict[tuple[str, int], str] = field(default_factory=dict)
    tool_results: dict[tuple[str, str], ToolResult] = field(default_factory=dict)
    approvals: dict[tuple[str, str], bool] = field(default_factory=dict)
    user_messages: dict[tuple[str, int], str] = field(default_factory=dict)  # (agent id, step) -> text
    # decisions a person took for requests the run waited for, and those still open, by
    # (agent id, call id) (durable/decisions.py)
    decisions: dict[tuple[str, str], DecisionEvent] = field(default_factory=dict)
    waiting: dict[tuple[str, str], DecisionPendingEvent] = field(default_factory=dict)
    tasks: dict[str, str] = field(default_factory=dict)  # agent id -> the task its agent_start recorded
    intents: set[tuple[str, str]] = field(default_factory=set)  # calls not safe to repeat that started
    hooks: dict[tuple[str, str, str], HookEvent] = field(default_factory=dict)  # (agent id, moment, hook)
    # guardrail verdicts by (agent id, moment, guardrail)
    verdicts: dict[tuple[str, str, str], GuardrailEvent] = field(default_factory=dict)
    served_by: dict[tuple[str, int], str] = field(default_factory=dict)  # calls a fallback answered
    prints: dict[tuple[str, int], RequestPrint] = field(default_factory=dict)
    callers: dict[tuple[str, int], str] = field(default_factory=dict)  # recorded call -> its agent
    failures: dict[tuple[str, int], str] = field(default_factory=dict)  # calls that failed for good
    asked: dict[str, int] = field(default_factory=dict)  # agent id -> its last recorded model call
    used: set[tuple[str, int]] = field(default_factory=set)  # recorded calls a replay answered
    resumes: int = 0  # the recorded run's resume count (`run_resumed` events)
    date: str | None = None  # the recorded run's `date`
    run_id: str | None = None  # the recorded run's `run_id` (as its templates saw it)
    divergence: Divergence | None = None  # where a replay first differed from the recording
    recorded: Counter[EventKey] = field(default_factory=Counter)
    emitted: Counter[EventKey] = field(default_factory=Counter)
    diverged: set[str] = field(default_factory=set)  # agent ids that went live after a mismatch
    # what each kind keeps of the recording, by its record class (KindRecord)
    records: dict[type[KindRecord], KindRecord] = field(default_factory=dict)

    @classmethod
    def from_events(cls, path: Path, mode: Mode, records: Iterable[type[KindRecord]]) -> Ledger:
        """The ledger of a recorded log, each kind's record folded in with it (`records`: every
        registered kind's, runtime/kinds.kind_records())."""
        ledger = cls(mode)
        readers: dict[type[Event], list[KindRecord]] = {}
        for kind in records:
            record = ledger.records[kind] = kind(ledger)
            for read in kind.reads:
                readers.setdefault(read, []).append(record)
        for event in read_events(path, strict=True):
            ledger.recorded[event_key(event)] += 1
            ledger._add(event)
            for record in readers.get(type(event), ()):
                record.add(event)
        return ledger

    def _add(self, event: Event) -> None:
        if isinstance(event, ModelRequestEvent | ModelResponseEvent | RunStartEvent):
            self._add_model_event(event)
        elif isinstance(event, ToolResultEvent):
            self.tool_results[(event.agent_id, event.call_id)] = event.result
        elif isinstance(event, ApprovalEvent | DecisionPendingEvent | DecisionEvent):
            self._add_decision(event)
        elif isinstance(event, UserMessageEvent):
            self.user_messages[(event.agent_id, event.step)] = event.text
        elif isinstance(event, AgentStartEvent):
            self.tasks.setdefault(event.agent_id, event.task)
        elif isinstance(event, ToolIntentEvent | HookEvent | GuardrailEvent):
            self._add_call_event(event)
        elif isinstance(event, RunResumedEvent):
            self.resumes += 1
        elif isinstance(event, ErrorEvent) and event.where == "model" and event.agent_id:
            step = self.asked.get(event.agent_id)
            if step is not None:
                self.failures[(event.agent_id, step)] = event.message

    def record(self, kind: type[R]) -> R:
        """A kind's record of the recording (an empty one for a kind registered since)."""
        found = self.records.get(kind)
        if not isinstance(found, kind):
            found = self.records[kind] = kind(self)
        return found

    def _add_call_event(self, event: ToolIntentEvent | HookEvent | GuardrailEvent) -> None:
        if isinstance(event, HookEvent):
            self.hooks[(event.agent_id, event.call_id, event.hook)] = event
        elif isinstance(event, GuardrailEvent):
            self.verdicts.setdefault((event.agent_id, event.call_id, event.guardrail), event)
        else:
            self.intents.add((event.agent_id, event.call_id))

    def _add_decision(self, event: ApprovalEvent | DecisionPendingEvent | DecisionEvent) -> None:
        key = (event.agent_id, event.call_id)
        if isinstance(event, ApprovalEvent):
            self.approvals[key] = event.approved
        elif isinstance(event, DecisionPendingEvent):
            earlier = self.waiting.get(key)
            if earlier is None or earlier.attempt != event.attempt:  # a later attempt asked anew
                self.waiting[key] = event
        else:
            self.decisions[key] = event
            asked = self.waiting.get(key)
            if asked is not None and one_attempt(asked.attempt, event.attempt):
                del self.waiting[key]

    def _add_model_event(self, event: ModelRequestEvent | ModelResponseEvent | RunStartEvent) -> None:
        if isinstance(event, RunStartEvent):
            self.date = self.date or event.date or _local_date(event.t)
            self.run_id = self.run_id or event.run_id
            return
        key = (event.agent_id, event.step)
        if isinstance(event, ModelRequestEvent):
            self.requests[key] = event.digest
            self.asked[event.agent_id] = event.step
            self.prints[key] = RequestPrint(
                event.system_digest, event.tools_digest, tuple(event.tools), event.model_id
            )
            return
        self.responses[key] = (self.requests.get(key, ""), event.response)
        self.callers[key] = event.agent
        if event.served_by:
            self.served_by[key] = event.served_by

    def response(
        self, agent_id: str, step: int, digest: str, agent: str, now: RequestPrint | None = None
    ) -> ModelResponse | None:
        """The recorded answer to this model call, when the request is the one recorded (its
        system prompt, tool schemas and history); None to go live (resume only). A replay of
        a call that failed for good in the recording raises that failure (RecordedFailure)."""
        if agent_id in self.diverged:
            return None
        found = self.responses.get((agent_id, step))
        failure = self.failures.get((agent_id, step)) if found is None and self.mode == "replay" else None
        if found is None and failure is None:
            if self.mode == "replay":
                raise self._diverged(
                    agent,
                    agent_id,
                    step,
                    "missing",
                    f"first differing step: agent '{agent}' ({agent_id}) model call {step} "
                    "is not in the recording",
                )
            return None
        recorded_digest = found[0] if found is not None else self.requests.get((agent_id, step), "")
        recorded = self.prints.get((agent_id, step))
        reason = _difference(recorded, now)
        if reason is None and recorded_digest and recorded_digest != digest:
            reason = "history"
        if reason is not None:
            if self.mode == "replay":
                what = _what_differs(reason, recorded, now)
                message = f"first differing step: agent '{agent}' ({agent_id}) model call {step}: {what}"
                raise self._diverged(agent, agent_id, step, reason, message)
            self.diverged.add(agent_id)
            return None
        if found is None:
            raise RecordedFailure(failure or "", agent=agent)
        self.used.add((agent_id, step))
        return ModelResponse.from_dict(found[1].to_dict())  # a fresh copy: the loop may edit it

    def check_complete(self) -> None:
        """At the end of a replay that went well: a recorded model call it never made (a step
        removed, a lower `max_steps`, an agent that now stops sooner) is a divergence too."""
        if self.mode != "replay" or self.divergence is not None:
            return
        left = [key for key in self.responses if key not in self.used]
        if not left:
            return
        agent_id, step = left[0]
        agent = self.callers.get((agent_id, step), agent_id)
        message = (
            f"first differing step: agent '{agent}' ({agent_id}) model call {step} is in the recording "
            f"but the replay never made it ({len(left)} recorded call(s) unused)"
        )
        raise self._diverged(agent, agent_id, step, "unused", message)

    def check_decision(self, where: str, condition: str, recorded: bool | None, met: bool) -> None:
        """Replay: an `if:` or `until` condition decided otherwise than in the recording (the
        condition was edited, or what it reads changed) is a divergence."""
        if self.mode != "replay" or recorded is None or recorded == met:
            return
        state = {True: "met", False: "not met"}
        message = (
            f"first differing step: {where}: its condition `{condition}` is now {state[met]}; "
            f"in the recording it was {state[recorded]}"
        )
        raise self._diverged("", where, 0, "condition", message)

    def _diverged(self, agent: str, agent_id: str, step: int, reason: str, message: str) -> Divergence:
        hint = (
            "the configuration changed so the run took another path"
            if reason in ("missing", "unused", "condition")
            else "the configuration changed since the run was recorded; `flowrun replay --diff` shows how"
        )
        found = Divergence(message, hint, agent=agent, agent_id=agent_id, step=step, reason=reason)
        if self.divergence is None:
            self.divergence = found
        return found

    def tool_result(self, agent_id: str, call_id: str) -> ToolResult | None:
        if agent_id in self.diverged:
            return None
        recorded = self.tool_results.get((agent_id, call_id))
        return ToolResult.from_dict(recorded.to_dict()) if recorded is not None else None

    def hook(self, agent_id: str, moment: str, hook_id: str) -> HookEvent | None:
        """What a hook answered at this moment in the recording (resume and replay reuse it)."""
        if agent_id in self.diverged:
            return None
        return self.hooks.get((agent_id, moment, hook_id))

    def verdict(self, agent_id: str, moment: str, guardrail: str) -> GuardrailEvent | None:
        """A guardrail's recorded verdict at this moment (resume and replay reuse it). A judge's
        recorded model calls are then never made again: they count as used."""
        if agent_id in self.diverged:
            return None
        found = self.verdicts.get((agent_id, moment, guardrail))
        if found is not None and found.judge_id:
            prefix = found.judge_id + "/"
            self.used |= {k for k in self.responses if k[0] == found.judge_id or k[0].startswith(prefix)}
        return found

    def started_unfinished(self, agent_id: str, call_id: str) -> bool:
        """True for a call not safe to repeat that an earlier attempt started and never
        finished (resume only): its effect is unknown, so it is not run again."""
        return (
            self.mode == "resume"
            and agent_id not in self.diverged
            and (agent_id, call_id) in self.intents
            and (agent_id, call_id) not in self.tool_results
            # a call that stopped to wait for its question's answer runs again with the answer
            and (agent_id, call_id) not in self.waiting
            and (agent_id, call_id) not in self.decisions
        )

    def approval(self, agent_id: str, call_id: str) -> bool | None:
        """The decision an earlier attempt recorded for this call (resume never asks again)."""
        return self.approvals.get((agent_id, call_id))

    def decision(self, agent_id: str, call_id: str) -> DecisionEvent | None:
        """What a person decided for a request this run waited for (resume and replay)."""
        return self.decisions.get((agent_id, call_id))

    def should_write(self, event: Event) -> bool:
        """On resume, an event the log already holds is not written again."""
        if self.mode != "resume" or not isinstance(event, REPEATABLE):
            return True
        key = event_key(event)
        self.emitted[key] += 1
        return self.emitted[key] > self.recorded[key]
