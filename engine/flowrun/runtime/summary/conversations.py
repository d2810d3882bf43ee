"""Each agent instance's conversation folded from a run's events, as the model saw it: its
system prompt (`agent_prompt`), its task (`agent_start`), the user's messages (`user_message`),
the engine's own turns (the nudge after an answer without tool calls, a repair turn after an
answer that does not match `output_schema`, a guardrail's retry), the model's answers
(`model_response`: text and tool calls) and the tool results it read (`tool_result`, as logged:
redacted). A sub-agent's conversation sits under the call that started it (a persistent
sub-agent's goes on under each call). `flowrun show --messages` prints it; the HTTP API sends it
(`conversation_json`) to the web UI."""

from __future__ import annotations

from dataclasses import dataclass, field

from flowrun.events import (
    AgentEndEvent,
    AgentPromptEvent,
    AgentStartEvent,
    ContextCompactedEvent,
    ContextResetEvent,
    ErrorEvent,
    Event,
    GuardrailEvent,
    IterationStartEvent,
    ModelRequestEvent,
    ModelResponseEvent,
    OutputInvalidEvent,
    ToolCallEvent,
    ToolResultEvent,
    UserMessageEvent,
)
from flowrun.runtime.guardrails.book import retry_message
from flowrun.runtime.loop.agent import CONTINUE
from flowrun.runtime.loop.structured import repair_message
from flowrun.types import ToolResult


@dataclass
class Call:
    """A tool call of an answer: what the model asked, what it read back, and the sub-agent
    conversations the call ran (agent as tool)."""

    id: str
    name: str
    arguments: object
    dispatched: bool = False  # a tool_call event was seen for it
    result: ToolResult | None = None
    segments: list[Segment] = field(default_factory=list)


@dataclass
class Turn:
    role: str  # system | user | assistant | note
    text: str = ""
    kind: str = ""  # user: task | message | engine; note: reset | compacted | error | end | iteration
    calls: list[Call] = field(default_factory=list)
    thinking: str = ""
    step: int | None = None  # an answer's model call (the agent's step)


@dataclass
class Prompt:
    """What an instance was told from its step `from_step` on: its rendered system prompt and
    the tools offered (name, description, JSON Schema of the arguments)."""

    system: str
    tools: list[dict[str, object]]
    from_step: int


@dataclass
class Instance:
    agent: str
    agent_id: str
    parent: str | None = None
    model: str = ""
    session: str | None = None
    segments: list[Segment] = field(default_factory=list)
    pending: list[Turn] = field(default_factory=list)  # a system prompt recorded before agent_start
    prompts: list[Prompt] = field(default_factory=list)
    last_step: int = 0  # its latest answer's step

    @property
    def turns(self) -> list[Turn]:
        return [turn for segment in self.segments for turn in segment.turns]


@dataclass
class Segment:
    """One stretch of an instance's conversation: from an agent_start to its agent_end."""

    instance: Instance
    turns: list[Turn] = field(default_factory=list)
    model: str = ""
    ongoing: bool = False  # a persistent instance's later call: its earlier turns are above
    open: bool = True


class Conversations:
    """Folds the event stream into instances and the segments of their conversations."""

    def __init__(self) -> None:
        self.instances: dict[str, Instance] = {}
        self.roots: list[Segment | Turn] = []  # top-level segments, with iteration notes between
        self.started: list[Segment] = []  # every segment, in the order they started

    def feed(self, event: Event) -> None:
        match event:
            case AgentPromptEvent():
                self._prompt(event)
            case AgentStartEvent():
                self._start(event)
            case AgentEndEvent():
                self._end(event)
            case ModelRequestEvent():
                self._request(event)
            case ModelResponseEvent():
                self._response(event)
            case ToolCallEvent():
                self._tool_call(event)
            case ToolResultEvent():
                self._tool_result(event)
            case UserMessageEvent():
                self._add(event.agent_id, Turn("user", event.text, "message"))
            case OutputInvalidEvent():
                self._add(event.agent_id, Turn("user", repair_message(event.problem), "engine"))
            case GuardrailEvent(where="output", action="retry"):  # the model read it as a user turn
                self._add(
                    event.agent_id, Turn("user", retry_message(event.guardrail, event.reason), "engine")
                )
            case _:
                self._note(event)

    # ------------------------------------------------------------ instances and segments

    def _instance(self, agent: str, agent_id: str) -> Instance:
        inst = self.instances.get(agent_id)
        if inst is None:
            inst = self.instances[agent_id] = Instance(agent, agent_id)
        return inst

    def _segment(self, agent_id: str) -> Segment | None:
        inst = self.instances.get(agent_id)
        if inst is None or not inst.segments:
            return None
        return inst.segments[-1]

    def _add(self, agent_id: str | None, turn: Turn) -> None:
        segment = self._segment(agent_id or "")
        if segment is not None:
            segment.turns.append(turn)

    def _prompt(self, e: AgentPromptEvent) -> None:
        inst = self._instance(e.agent, e.agent_id)
        inst.model = e.model or inst.model
        inst.prompts.append(Prompt(e.system, list(e.tools), inst.last_step + 1))
        segment = self._segment(e.agent_id)
        if segment is not None and segment.open:  # re-rendered mid-conversation (tools bound late)
            segment.turns.append(Turn("system", e.system, "updated"))
        else:
            inst.pending = [Turn("system", e.system)]

    def _start(self, e: AgentStartEvent) -> None:
        inst = self._instance(e.agent, e.agent_id)
        inst.parent, inst.session = e.parent, e.session or inst.session
        segment = Segment(inst, model=e.model or inst.model, ongoing=bool(inst.segments))
        segment.turns = [*inst.pending, Turn("user", e.task, "task")]
        inst.pending = []
        inst.segments.append(segment)
        self.started.append(segment)
        call = self._calling(e)
        if call is not None:
            call.segments.append(segment)
        else:
            self.roots.append(segment)

    def _calling(self, e: AgentStartEvent) -> Call | None:
        """The parent's open call that started this agent: the one whose id the instance id
        carries (`parent/agent@call`), else the first open call of the agent's name."""
        parent = self._segment(e.parent or "")
        if parent is None:
            return None
        open_calls = [
            c for turn in parent.turns if turn.role == "assistant" for c in turn.calls if c.result is None
        ]
        for call in open_calls:
            if e.agent_id.endswith(f"@{call.id}"):
                return call
        named = [c for c in open_calls if c.name == e.agent]
        fresh = [c for c in named if not any(s.instance.agent_id == e.agent_id for s in c.segments)]
        return next(iter(fresh or named), None)

    def _end(self, e: AgentEndEvent) -> None:
        segment = self._segment(e.agent_id)
        if segment is None:
            return
        steps = f" after {e.steps} step(s)" if e.steps is not None else ""
        text = f"{e.status}{steps}" + (f": {e.error}" if e.error else "")
        segment.turns.append(Turn("note", text, "end"))
        segment.open = False

    # ------------------------------------------------------------ model turns

    def _request(self, e: ModelRequestEvent) -> None:
        """Before a model call: an answer without tool calls that did not end the agent was
        followed by the engine's nudge (the loop does not log it as an event)."""
        segment = self._segment(e.agent_id)
        if segment is None or e.purpose or not segment.turns:
            return
        last = segment.turns[-1]
        if last.role == "assistant" and not last.calls:
            segment.turns.append(Turn("user", CONTINUE, "engine"))

    def _response(self, e: ModelResponseEvent) -> None:
        if e.purpose:  # a side call (a summary for the compact strategy): not the conversation
            return
        response = e.response
        calls = [Call(c.id, c.name, c.arguments or c.raw_arguments or {}) for c in response.tool_calls]
        thinking = "\n".join(str(b.get("thinking", "")) for b in response.thinking if b.get("thinking"))
        said = response.raw_text if response.raw_text is not None else response.text  # as written
        self._add(e.agent_id, Turn("assistant", said, calls=calls, thinking=thinking, step=e.step))
        inst = self.instances.get(e.agent_id)
        if inst is not None:
            inst.last_step = max(inst.last_step, e.step)

    def _last_calls(self, agent_id: str) -> list[Call]:
        segment = self._segment(agent_id)
        if segment is None:
            return []
        answer = next((t for t in reversed(segment.turns) if t.role == "assistant"), None)
        return answer.calls if answer is not None else []

    def _tool_call(self, e: ToolCallEvent) -> None:
        """The call as dispatched: its final id and its arguments as logged (redacted)."""
        calls = self._last_calls(e.agent_id)
        call = next((c for c in calls if c.id == e.call_id), None)
        call = call or next((c for c in calls if c.name == e.tool and not c.dispatched), None)
        if call is None:
            segment = self._segment(e.agent_id)
            if segment is None:
                return
            call = Call(e.call_id, e.tool, e.arguments)
            segment.turns.append(Turn("assistant", calls=[call]))
        call.id, call.arguments, call.dispatched = e.call_id, e.arguments, True

    def _tool_result(self, e: ToolResultEvent) -> None:
        segment = self._segment(e.agent_id)
        if segment is None:
            return
        for turn in reversed(segment.turns):
            for call in turn.calls:
                if call.id == e.call_id and call.result is None:
                    call.result = e.result
                    return

    def _note(self, e: Event) -> None:
        match e:
            case ContextResetEvent():
                text = (
                    f"context reset: {e.messages_before} → {e.messages_after} messages; the history "
                    "starts again from the opening message (with the dashboards as they are now)"
                )
                self._add(e.agent_id, Turn("note", text, "reset"))
            case ContextCompactedEvent():
                text = f"context compacted: {e.messages_before} → {e.messages_after} messages\n{e.transcript}"
                self._add(e.agent_id, Turn("note", text, "compacted"))
            case ErrorEvent() if e.agent_id:
                self._add(e.agent_id, Turn("note", f"error ({e.where}): {e.message}", "error"))
            case IterationStartEvent():
                self.roots.append(Turn("note", f"iteration {e.iteration} of {e.loop}", "iteration"))


# ------------------------------------------------------------------ as JSON, nested


def conversation_json(found: Conversations) -> list[dict[str, object]]:
    """The top-level segments (sub-agents nested under the calls that ran them) and the notes
    between them, as the web UI draws them; never folded."""
    return [_segment_json(item) if isinstance(item, Segment) else _turn_dict(item) for item in found.roots]


def _segment_json(segment: Segment) -> dict[str, object]:
    inst = segment.instance
    return {
        "agent": inst.agent,
        "agent_id": inst.agent_id,
        "model": segment.model or inst.model,
        "session": inst.session,
        "ongoing": segment.ongoing,
        "turns": [_turn_dict(turn) for turn in segment.turns],
    }


def _turn_dict(turn: Turn) -> dict[str, object]:
    out: dict[str, object] = {"role": turn.role, "kind": turn.kind, "text": turn.text}
    if turn.thinking:
        out["thinking"] = turn.thinking
    if turn.step is not None:
        out["step"] = turn.step
    out["calls"] = [
        {
            "id": call.id,
            "name": call.name,
            "arguments": call.arguments,
            "result": None
            if call.result is None
            else {"status": call.result.status, "text": call.result.model_text()},
            "segments": [_segment_json(s) for s in call.segments],
        }
        for call in turn.calls
    ]
    return out


# ------------------------------------------------------------------ one instance, as asked


def instance_json(found: Conversations, agent_id: str) -> dict[str, object] | None:
    """What one agent instance was asked and answered, for the web UI's details of a step: the
    system prompts and tools it was given (each from the step it held from), and every turn of
    its conversation in order (its sub-agents' not nested: they are instances of their own), each
    answer with its step and each tool result whole (status, text, error, stats, context).
    None when the run has no such instance."""
    inst = found.instances.get(agent_id)
    if inst is None:
        return None
    return {
        "agent": inst.agent,
        "agent_id": inst.agent_id,
        "parent": inst.parent,
        "model": inst.model,
        "session": inst.session,
        "prompts": [{"system": p.system, "tools": p.tools, "from_step": p.from_step} for p in inst.prompts],
        "turns": [_flat_turn(turn) for turn in inst.turns],
    }


def _flat_turn(turn: Turn) -> dict[str, object]:
    out = _turn_dict(turn)
    out["calls"] = [
        {
            "id": call.id,
            "name": call.name,
            "arguments": call.arguments,
            "result": None if call.result is None else _result(call.result),
            "agents": [s.instance.agent_id for s in call.segments],
        }
        for call in turn.calls
    ]
    return out


def _result(result: ToolResult) -> dict[str, object]:
    error = result.error
    return {
        "status": result.status,
        "text": result.model_text(),
        "error": None if error is None else {"code": error.code, "message": error.message},
        "stats": result.stats,
        "context": result.context,
    }
