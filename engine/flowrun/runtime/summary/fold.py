"""A run's events folded into what every view draws: each agent invocation (a persistent agent
called twice is two invocations) with its tool calls, usage and cost; the tree of who ran whom,
with loop iterations, step kinds' own groups and notes in order; the timeline's spans (model
calls, tool calls and the waits for a person); usage per agent and per model; the decisions
asked for and taken.

`RunFold.feed` takes one event at a time, so a server keeps one fold per run it shows and feeds
it only what the log gained since."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from flowrun.events import (
    AgentEndEvent,
    AgentStartEvent,
    DecisionEvent,
    DecisionPendingEvent,
    ErrorEvent,
    Event,
    IterationEndEvent,
    IterationStartEvent,
    ModelFallbackEvent,
    ModelRequestEvent,
    ModelResponseEvent,
    ModelRetryEvent,
    RunEndEvent,
    RunResumedEvent,
    RunStartEvent,
    StepEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from flowrun.runtime.durable.decisions import Decision, DecisionHistory, PendingDecision
from flowrun.types import Usage


@dataclass
class Note:
    """An event said in words where it happened (`Event.describe`)."""

    text: str
    level: str  # info | warn | error
    t: float
    type: str  # the event's type


@dataclass
class Call:
    """A tool call of an invocation; `agents`: the invocations it ran (an agent as a tool)."""

    call_id: str
    tool: str
    arguments: object
    start: float
    end: float | None = None
    status: str | None = None  # success | partial | error; None: no result (yet)
    error: str | None = None  # "CODE: message" of an error result
    agents: list[Invocation] = field(default_factory=list)


@dataclass
class Group:
    """What a step holds while it runs: a loop's iteration, or a step kind's own group (a
    `step` event of phase start); `outcome` what its end said."""

    label: str
    kind: str  # iteration, or the step kind
    outcome: str | None = None
    items: list[Item] = field(default_factory=list)


@dataclass
class Invocation:
    """One run of an agent, from its agent_start to its agent_end."""

    index: int  # in the order invocations started
    agent: str
    agent_id: str
    model: str
    start: float
    parent: Invocation | None = None
    call_id: str | None = None  # the parent's call that ran it
    task: str = ""
    session: str | None = None
    budget: dict[str, float] | None = None
    end: float | None = None
    status: str | None = None  # None: it never ended (the run stopped, or it still runs)
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None  # its own priced model calls
    error: str | None = None
    output_files: list[str] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)  # its calls, notes and callees, in order
    calls: dict[str, Call] = field(default_factory=dict)  # by call id

    def children(self) -> list[Invocation]:
        """The invocations it ran, through its calls or directly."""
        out: list[Invocation] = []
        for item in self.items:
            if isinstance(item, Invocation):
                out.append(item)
            elif isinstance(item, Call):
                out.extend(item.agents)
        return out

    def subtree(self) -> tuple[int, float | None]:
        """Tokens and cost of this invocation and of everything it ran."""
        tokens, cost = self.usage.total, self.cost_usd
        for child in self.children():
            child_tokens, child_cost = child.subtree()
            tokens += child_tokens
            if child_cost is not None:
                cost = (cost or 0.0) + child_cost
        return tokens, cost


Item = Invocation | Call | Group | Note


@dataclass
class Span:
    """A bar of the timeline on its invocation's lane: a model call (`model`), a tool call
    (`tool`) or a wait for a person (`wait`)."""

    kind: str
    lane: int  # the invocation's index
    start: float
    label: str
    end: float | None = None
    outcome: str = "running"  # model: ok, replayed, error; tool: its status; wait: how it ended
    step: int | None = None
    tool: str | None = None
    call_id: str | None = None
    model: str | None = None  # provider:model asked, or the one that answered
    model_name: str = ""  # the model of the workflow's `models:` it was asked of
    tokens: int | None = None
    cost_usd: float | None = None
    tool_calls: list[str] = field(default_factory=list)  # what a model call asked for
    agent_id: str = ""  # the invocation's instance path (its lane)
    purpose: str | None = None  # a side call's (a summary for the compact strategy)
    latency_ms: float | None = None  # of a model call's answer
    input_tokens: int | None = None
    output_tokens: int | None = None
    retries: list[str] = field(default_factory=list)  # why each retry of a model call was made
    fallbacks: list[str] = field(default_factory=list)  # "from → to (reason)" per switch


@dataclass
class UsageRow:
    """Model usage of one agent with one model (a model of the workflow's `models:`), as
    usage.json's `by_agent_model` counts it."""

    agent: str
    model: str
    usage: Usage = field(default_factory=Usage)
    calls: int = 0
    cost_usd: float | None = None

    def add(self, usage: Usage, cost: float | None) -> None:
        self.usage = self.usage + usage
        self.calls += 1
        if cost is not None:
            self.cost_usd = (self.cost_usd or 0.0) + cost


class RunFold:
    """The fold of one run's events (see the module's docstring)."""

    def __init__(self) -> None:
        self.invocations: list[Invocation] = []
        self.current: dict[str, Invocation] = {}  # agent id -> its latest invocation
        self.roots: list[Item] = []
        self.groups: list[Group] = []  # the open ones, innermost last
        self.notes: list[Note] = []  # the run's own (no agent, no step)
        self.spans: list[Span] = []
        self.open_spans: dict[tuple[str, ...], Span] = {}
        # the tool calls a run's end cut (key -> span, whether the run stopped to wait): a
        # resume goes on with them
        self.stopped: dict[tuple[str, ...], tuple[Span, bool]] = {}
        self.by_agent_model: dict[tuple[str, str], UsageRow] = {}
        self.history = DecisionHistory()  # the requests open, as `flowrun approve` reads them
        self.decisions: list[Decision] = []
        self.start: RunStartEvent | None = None
        self.end: RunEndEvent | None = None  # the last run_end, unless the run went on after it
        self.events = 0
        self.last_seq = 0
        self.first_t: float | None = None
        self.last_t: float | None = None
        self.usage = Usage()
        self.steps = 0
        self.cost_usd: float | None = None
        self.retries = 0
        self.tool_calls = 0
        self.tool_errors = 0
        self.options: dict[str, object] | None = None  # of the latest start or resume

    # ------------------------------------------------------------ feeding

    def feed(self, e: Event) -> None:
        self.events += 1
        self.last_seq = max(self.last_seq, e.seq)
        if isinstance(e.t, float | int) and e.t:
            self.first_t = e.t if self.first_t is None else self.first_t
            self.last_t = e.t
        handler = HANDLERS.get(type(e))
        if handler is not None:
            handler(self, e)
        else:
            self._note(e)

    def _run_start(self, e: RunStartEvent) -> None:
        self.start, self.end = e, None
        self.options = dict(e.options) if e.options else self.options

    def _run_resumed(self, e: RunResumedEvent) -> None:
        self.history.feed(e)
        self.end = None
        self.options = dict(e.options) if e.options else self.options
        self._reopen(e.t)
        self._note(e)

    def _run_end(self, e: RunEndEvent) -> None:
        self.history.feed(e)
        self.end = e
        self.close(e.t, e.status)

    def _agent_start(self, e: AgentStartEvent) -> None:
        parent = self.current.get(e.parent or "")
        inst = Invocation(
            len(self.invocations), e.agent, e.agent_id, e.model or "?", e.t, parent, task=e.task,
            session=e.session, budget=e.budget,
        )  # fmt: skip
        if parent is None:
            self._container().append(inst)
        else:
            call = _calling(parent, e)
            if call is not None:
                inst.call_id = call.call_id
                call.agents.append(inst)
            else:
                parent.items.append(inst)
        self.invocations.append(inst)
        self.current[e.agent_id] = inst

    def _agent_end(self, e: AgentEndEvent) -> None:
        inst = self.current.get(e.agent_id)
        if inst is None:
            return
        inst.end, inst.status, inst.error = e.t, e.status, e.error
        inst.steps = e.steps if e.steps is not None else inst.steps
        inst.output_files = list(e.output_files or [])
        for span in [s for key, s in self.open_spans.items() if s.lane == inst.index and key[0] == "model"]:
            self._close_span(span, e.t, "error" if e.error else "interrupted")

    def _model_request(self, e: ModelRequestEvent) -> None:
        inst = self.current.get(e.agent_id)
        if inst is None:
            return
        label = f"step {e.step}" + (f" ({e.purpose})" if e.purpose else "")
        span = Span("model", inst.index, e.t, label, step=e.step, model=e.model_id or e.model or None)
        span.model_name, span.agent_id, span.purpose = e.model, e.agent_id, e.purpose
        self._open_span(("model", e.agent_id, str(e.step), e.purpose or ""), span)

    def _model_response(self, e: ModelResponseEvent) -> None:
        usage, cost = e.response.usage, e.cost_usd
        self.steps += 1
        self.usage = self.usage + usage
        if cost is not None:
            self.cost_usd = (self.cost_usd or 0.0) + cost
        key = ("model", e.agent_id, str(e.step), e.purpose or "")
        span = self.open_spans.pop(key, None)
        inst = self.current.get(e.agent_id)
        model = (
            e.served_by or (span.model_name if span is not None else None) or (inst.model if inst else "?")
        )
        row = self.by_agent_model.setdefault((e.agent, model), UsageRow(e.agent, model))
        row.add(usage, cost)
        if inst is None:
            return
        inst.steps = max(inst.steps, e.step)
        inst.usage = inst.usage + usage
        if cost is not None:
            inst.cost_usd = (inst.cost_usd or 0.0) + cost
        if span is None:  # (a log from before model_request was written)
            span = Span("model", inst.index, e.t - e.latency_ms / 1000, f"step {e.step}", step=e.step)
            span.agent_id, span.purpose = e.agent_id, e.purpose
            self.spans.append(span)
        span.end, span.outcome = e.t, "replayed" if e.replayed else "ok"
        span.tokens, span.cost_usd = usage.total, cost
        span.input_tokens, span.output_tokens = usage.input_tokens, usage.output_tokens
        span.latency_ms = e.latency_ms
        span.model = e.served_by or span.model or e.response.model or None
        span.tool_calls = [c.name for c in e.response.tool_calls]

    def _tool_call(self, e: ToolCallEvent) -> None:
        inst = self.current.get(e.agent_id)
        if inst is None or e.call_id in inst.calls:  # (dispatched again after a resume)
            return
        call = Call(e.call_id, e.tool, e.arguments, e.t)
        inst.calls[e.call_id] = call
        inst.items.append(call)
        self.tool_calls += 1
        span = Span("tool", inst.index, e.t, e.tool, tool=e.tool, call_id=e.call_id, agent_id=e.agent_id)
        self._open_span(("tool", e.agent_id, e.call_id), span)

    def _tool_result(self, e: ToolResultEvent) -> None:
        inst = self.current.get(e.agent_id)
        call = inst.calls.get(e.call_id) if inst is not None else None
        if call is None or call.status is not None:
            return
        call.end, call.status = e.t, e.result.status
        if call.status == "error":
            self.tool_errors += 1
            error = e.result.error
            call.error = f"{error.code}: {error.message}" if error else "ERROR"
        span = self.open_spans.pop(("tool", e.agent_id, e.call_id), None)
        if span is not None:
            span.end, span.outcome = e.t, call.status

    @property
    def pending(self) -> dict[tuple[str, str], PendingDecision]:
        return self.history.open

    def _decision_pending(self, e: DecisionPendingEvent) -> None:
        self.history.feed(e)
        inst = self.current.get(e.agent_id)
        lane = inst.index if inst is not None else 0
        asked = {"approval": f"waiting to allow {e.tool}", "question": "waiting for an answer"}
        span = Span("wait", lane, e.t, asked.get(e.kind, f"waiting for more budget ({e.limit})"))
        span.call_id, span.tool, span.outcome, span.agent_id = e.call_id, e.tool, "waiting", e.agent_id
        self._open_span(("wait", e.agent_id, e.call_id), span)
        self._note(e)

    def _decision(self, e: DecisionEvent) -> None:
        self.history.feed(e)
        self.decisions.append(Decision.from_event(e))
        span = self.open_spans.pop(("wait", e.agent_id, e.call_id), None)
        if span is not None:
            span.end = e.t
            span.outcome = "answered" if e.kind == "question" else "allowed" if e.allowed else "denied"
        self._note(e)

    def _iteration_start(self, e: IterationStartEvent) -> None:
        self._open_group(Group(e.describe(), "iteration"))

    def _iteration_end(self, e: IterationEndEvent) -> None:
        self._close_group("iteration", "until met" if e.until_met else None)

    def _step(self, e: StepEvent) -> None:
        if e.phase == "start":
            self._open_group(Group(e.text, e.kind))
        elif e.phase == "end":
            self._close_group(e.kind, e.text)
        else:
            self._note(e)

    def _open_group(self, group: Group) -> None:
        self._container().append(group)
        self.groups.append(group)

    def _close_group(self, kind: str, outcome: str | None) -> None:
        """The innermost open group of this kind ends (a group it holds that never ended, too)."""
        for i in range(len(self.groups) - 1, -1, -1):
            if self.groups[i].kind == kind:
                self.groups[i].outcome = outcome
                del self.groups[i:]
                return

    def _model_retry(self, e: ModelRetryEvent) -> None:
        self.retries += 1
        # the event names the model, not the agent: the latest open call of that model retried
        asking = [s for s in self.open_spans.values() if s.kind == "model" and s.model_name == e.model]
        if asking:
            asking[-1].retries.append(f"retry {e.retry} after {e.delay_s:g} s: {e.reason}")
        self._note(e)

    def _model_fallback(self, e: ModelFallbackEvent) -> None:
        for key, span in self.open_spans.items():
            if key[:3] == ("model", e.agent_id, str(e.step)):
                span.fallbacks.append(f"{e.from_model} → {e.to_model} ({e.reason})")
        self._note(e)

    def _error(self, e: ErrorEvent) -> None:
        inst = self.current.get(e.agent_id or "")
        if inst is not None:
            for key, span in list(self.open_spans.items()):
                if key[0] == "model" and span.lane == inst.index:
                    self._close_span(span, e.t, "error")
        self._note(e)

    def _note(self, e: Event) -> None:
        """An event that is a note of its own (`Event.level`), under its invocation, or in the
        step it belongs to, or the run's."""
        level = e.level()
        if not level:
            return
        note = Note(e.describe(), level, e.t, e.type)
        inst = self.current.get(e.agent_key or "")
        if inst is not None:
            inst.items.append(note)
        elif hasattr(e, "step") or hasattr(e, "loop"):  # a step's: fan-out, skipped, until
            self._container().append(note)
        else:
            self.notes.append(note)

    # ------------------------------------------------------------ spans

    def _container(self) -> list[Item]:
        return self.groups[-1].items if self.groups else self.roots

    def _open_span(self, key: tuple[str, ...], span: Span) -> None:
        self.open_spans[key] = span
        self.spans.append(span)

    def _close_span(self, span: Span, t: float, outcome: str) -> None:
        span.end, span.outcome = t, outcome
        for key, open_span in list(self.open_spans.items()):
            if open_span is span:
                del self.open_spans[key]

    def close(self, t: float, status: str) -> None:
        """The run ended `status` at `t`: its open calls end there (waiting, or interrupted). A
        wait for a person goes on while the run waits (its decision ends it); cut tool calls
        are kept for a resume."""
        waiting = status == "waiting"
        for key, span in list(self.open_spans.items()):
            if span.kind == "wait":
                if not waiting:
                    self._close_span(span, t, "waiting")
                continue
            self._close_span(span, t, "waiting" if waiting else "interrupted")
            if span.kind == "tool":
                self.stopped[key] = (span, waiting)

    def _reopen(self, t: float) -> None:
        """A resume goes on with the tool calls its run's end cut: a call that waited for the
        run's decisions is the same bar again, a call cut by a stop runs again from `t`."""
        for key, (span, waited) in self.stopped.items():
            if waited:
                span.end, span.outcome = None, "running"
                self.open_spans[key] = span
            else:
                again = Span("tool", span.lane, t, span.label, tool=span.tool, call_id=span.call_id)
                again.agent_id = span.agent_id
                self._open_span(key, again)
        self.stopped.clear()


def _calling(parent: Invocation, e: AgentStartEvent) -> Call | None:
    """The parent's open call that started this agent: the one whose id the instance id
    carries (`parent/agent@call`), else the latest open call of the agent's name."""
    open_calls = [c for c in parent.calls.values() if c.status is None]
    for call in open_calls:
        if e.agent_id.endswith(f"@{call.call_id}"):
            return call
    named = [c for c in open_calls if c.tool == e.agent]
    return named[-1] if named else None


# each event type's handler (a method taking that type: `...` since each takes its own)
HANDLERS: dict[type[Event], Callable[..., None]] = {
    RunStartEvent: RunFold._run_start,
    RunResumedEvent: RunFold._run_resumed,
    RunEndEvent: RunFold._run_end,
    AgentStartEvent: RunFold._agent_start,
    AgentEndEvent: RunFold._agent_end,
    ModelRequestEvent: RunFold._model_request,
    ModelResponseEvent: RunFold._model_response,
    ModelRetryEvent: RunFold._model_retry,
    ModelFallbackEvent: RunFold._model_fallback,
    ToolCallEvent: RunFold._tool_call,
    ToolResultEvent: RunFold._tool_result,
    DecisionPendingEvent: RunFold._decision_pending,
    DecisionEvent: RunFold._decision,
    IterationStartEvent: RunFold._iteration_start,
    IterationEndEvent: RunFold._iteration_end,
    StepEvent: RunFold._step,
    ErrorEvent: RunFold._error,
}
