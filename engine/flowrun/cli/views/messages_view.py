"""`flowrun show RUN --messages`: each agent instance's conversation, read from events.jsonl.

An instance's conversation is its system prompt (`agent_prompt`), its task (`agent_start`), the
user's messages (`user_message`), the engine's own turns (the nudge after an answer without tool
calls, a repair turn after an answer that does not match `output_schema`), the model's answers
(`model_response`: text and tool calls) and the tool results the model read (`tool_result`, as
logged: redacted). A sub-agent's conversation is shown under the call that started it (a
persistent sub-agent's goes on under each call), so an instructor/worker or orchestrator/sub-agent
exchange reads in order. The same as data (`--json`): one object per instance, flat."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from flowrun.errors import RunError
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
from flowrun.runtime.durable.event_log import read_events
from flowrun.runtime.guardrails.book import retry_message
from flowrun.runtime.loop.agent import CONTINUE
from flowrun.runtime.loop.structured import repair_message
from flowrun.types import ToolResult

LIST_HINT = "pass a run folder such as runs/<run-id>; `flowrun runs` lists them"
FOLD_LINES = 20  # a longer text shows its first lines and says how many more there are
FOLD_CHARS = 2000


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


@dataclass
class Instance:
    agent: str
    agent_id: str
    parent: str | None = None
    model: str = ""
    session: str | None = None
    segments: list[Segment] = field(default_factory=list)
    pending: list[Turn] = field(default_factory=list)  # a system prompt recorded before agent_start

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
        self._add(e.agent_id, Turn("assistant", response.text, calls=calls, thinking=thinking))

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


# ------------------------------------------------------------------ reading a run


def read_conversations(run_dir: Path) -> Conversations:
    if not run_dir.is_dir():
        raise RunError(f"{run_dir} is not a folder", LIST_HINT)
    if not (run_dir / "events.jsonl").is_file():
        raise RunError(f"{run_dir} has no events.jsonl, so it is not a flowrun run folder", LIST_HINT)
    found = Conversations()
    for event in read_events(run_dir / "events.jsonl"):
        found.feed(event)
    if not found.instances:
        raise RunError(f"{run_dir} records no agent", "the run stopped before its first agent started")
    return found


def _chosen(found: Conversations, agent: str | None, run_dir: Path) -> list[Segment | Turn]:
    """The segments to print: the top-level ones (sub-agents nested under their calls), or
    every segment of one agent's instances, in the order they ran."""
    if agent is None:
        return found.roots
    names = sorted({inst.agent for inst in found.instances.values()})
    if agent not in names:
        raise RunError(f"no agent '{agent}' in {run_dir}", "its agents: " + ", ".join(names))
    return [s for s in found.started if s.instance.agent == agent]


# ------------------------------------------------------------------ text


def fold(text: str, full: bool, hint: str) -> str:
    """`text`, or its first lines and how much is left out (unless `full`)."""
    if full:
        return text
    lines = text.splitlines()
    shown = lines[:FOLD_LINES]
    kept = "\n".join(shown)
    if len(kept) > FOLD_CHARS:
        kept = kept[:FOLD_CHARS]
        shown = kept.splitlines()
    if kept == text or kept == "\n".join(lines):
        return text
    rest_lines = len(lines) - len(shown)
    rest_chars = len(text) - len(kept)
    more = f"{rest_lines} more line(s)" if rest_lines > 0 else f"{rest_chars} more character(s)"
    return f"{kept}…\n[… {more}: {hint} shows all]"


def _arguments_text(arguments: object) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


class _Writer:
    def __init__(self, full: bool, hint: str) -> None:
        self.full = full
        self.hint = hint
        self.lines: list[str] = []

    def block(self, prefix: str, label: str, text: str) -> None:
        """`label` on its own line, then `text` indented under it (folded when long)."""
        self.lines.append(f"{prefix}{label}")
        body = fold(text, self.full, self.hint)
        for line in body.splitlines() or [""]:
            self.lines.append(f"{prefix}    {line}".rstrip())

    def segment(self, segment: Segment, prefix: str) -> None:
        inst = segment.instance
        model = segment.model or inst.model
        facts = [inst.agent_id, f"model {model}"] + ([f"session {inst.session}"] if inst.session else [])
        head = f"{prefix}── {inst.agent} · " + " · ".join(facts) + " "
        self.lines.append(head.ljust(max(len(head), 100), "─"))
        if segment.ongoing:
            self.lines.append(f"{prefix}(its conversation goes on from its earlier call)")
        for turn in segment.turns:
            self.turn(turn, prefix)

    def turn(self, turn: Turn, prefix: str) -> None:
        if turn.role == "system":
            label = "system (re-rendered: more tools bound)" if turn.kind == "updated" else "system"
            self.block(prefix, label, turn.text)
        elif turn.role == "user":
            label = {"task": "user (task)", "engine": "user (from flowrun)"}.get(turn.kind, "user")
            self.block(prefix, label, turn.text)
        elif turn.role == "note":
            first, _, rest = turn.text.partition("\n")
            self.lines.append(f"{prefix}[{first}]")
            if rest:
                body = fold(rest, self.full, self.hint)
                self.lines.extend(f"{prefix}    {line}".rstrip() for line in body.splitlines())
        else:
            self.answer(turn, prefix)

    def answer(self, turn: Turn, prefix: str) -> None:
        if turn.thinking:
            self.block(prefix, "assistant (thinking)", turn.thinking)
        if turn.text or not turn.calls:
            self.block(prefix, "assistant", turn.text or "(no text)")
        elif not turn.thinking:
            self.lines.append(f"{prefix}assistant")
        for call in turn.calls:
            arguments = fold(_arguments_text(call.arguments), self.full, self.hint)
            first, *rest = arguments.splitlines() or [""]
            self.lines.append(f"{prefix}  → {call.name} {first}".rstrip())
            self.lines.extend(f"{prefix}      {line}".rstrip() for line in rest)
        for call in turn.calls:
            for segment in call.segments:
                self.segment(segment, prefix + "  │ ")
            self.result(call, prefix)

    def result(self, call: Call, prefix: str) -> None:
        result = call.result
        if result is None:
            self.lines.append(f"{prefix}tool {call.name} [{call.id}]: no result (the run stopped first)")
            return
        self.block(prefix, f"tool {call.name} [{call.id}]: {result.status}", result.model_text())


def format_messages(run_dir: Path, agent: str | None = None, full: bool = False) -> str:
    """Each conversation as text: sub-agents under the calls that ran them (or, with `agent`,
    that agent's instances one after another), long texts folded unless `full`."""
    found = read_conversations(run_dir)
    hint = f"`flowrun show {run_dir} --messages --full`"
    writer = _Writer(full, hint)
    for item in _chosen(found, agent, run_dir):
        if isinstance(item, Segment):
            writer.segment(item, "")
        else:
            writer.lines.append(f"[{item.text}]")
        writer.lines.append("")
    return "\n".join(writer.lines).rstrip()


# ------------------------------------------------------------------ JSON


def messages_json(run_dir: Path, agent: str | None = None) -> list[dict[str, object]]:
    """One object per instance (in the order they started): its agent, id, parent, model and
    session, and its messages in order; a call that ran a sub-agent names its instance
    (`agent_id`), whose own object holds that conversation. Never folded."""
    found = read_conversations(run_dir)
    if agent is not None:
        _chosen(found, agent, run_dir)  # the error for an unknown agent
    out: list[dict[str, object]] = []
    for inst in found.instances.values():
        if agent is not None and inst.agent != agent:
            continue
        if not inst.segments:
            continue
        out.append(
            {
                "agent": inst.agent,
                "agent_id": inst.agent_id,
                "parent": inst.parent,
                "model": inst.model,
                "session": inst.session,
                "messages": [m for turn in inst.turns for m in _turn_json(turn)],
            }
        )
    return out


def _turn_json(turn: Turn) -> list[dict[str, object]]:
    if turn.role == "system":
        system: dict[str, object] = {"role": "system", "text": turn.text}
        return [system | ({"kind": turn.kind} if turn.kind else {})]
    if turn.role in ("user", "note"):
        return [{"role": turn.role, "kind": turn.kind, "text": turn.text}]
    answer: dict[str, object] = {"role": "assistant", "text": turn.text}
    if turn.thinking:
        answer["thinking"] = turn.thinking
    answer["tool_calls"] = [_call_json(call) for call in turn.calls]
    results = [
        {"role": "tool", "call_id": call.id, "name": call.name} | _result_json(call.result)
        for call in turn.calls
    ]
    return [answer, *results]


def _call_json(call: Call) -> dict[str, object]:
    out: dict[str, object] = {"id": call.id, "name": call.name, "arguments": call.arguments}
    agents = list(dict.fromkeys(s.instance.agent_id for s in call.segments))
    if agents:
        out["agent_ids"] = agents
    return out


def _result_json(result: ToolResult | None) -> dict[str, object]:
    if result is None:
        return {"status": None, "text": None}
    out: dict[str, object] = {"status": result.status, "text": result.model_text()}
    if result.error is not None:
        out["error"] = {"code": result.error.code, "message": result.error.message}
    return out
