"""Looking at finished (or crashed) runs from their folders: `flowrun runs` lists them, `flowrun
show RUN_DIR` draws one as a tree of agents and tool calls. Everything is read from run.json,
usage.json and events.jsonl; nothing here needs the workflow that wrote them."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path

from rich.console import Console, RenderableType
from rich.text import Text
from rich.tree import Tree

from flowrun.cli.views.runs_table import (
    STATUS_STYLE,
    UNWRAPPED_WIDTH,
    RunRow,
    format_cost,
    format_duration,
    format_inputs,
    format_runs,
    list_runs,
    output_width,
    row_of,
    since_time,
)
from flowrun.cli.views.runs_table import short as _short
from flowrun.errors import FlowrunError, RunError
from flowrun.events import (
    AgentEndEvent,
    AgentPromptEvent,
    AgentStartEvent,
    BudgetExceededEvent,
    CallBudgetExceededEvent,
    ContextResetEvent,
    ErrorEvent,
    Event,
    FanoutStartEvent,
    GuardrailEvent,
    HookEvent,
    IterationEndEvent,
    IterationStartEvent,
    ModelFallbackEvent,
    ModelResponseEvent,
    ModelRetryEvent,
    OutputInvalidEvent,
    RunEndEvent,
    RunStartEvent,
    StepConditionEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from flowrun.pinned import read_json_object
from flowrun.records import RunRecord, run_record
from flowrun.runtime.durable.event_log import read_events
from flowrun.runtime.options import RunOptions

__all__ = [  # the table of `flowrun runs` lives in runs_table.py; these names stay importable here
    "UNWRAPPED_WIDTH",
    "RunRow",
    "format_cost",
    "format_duration",
    "format_inputs",
    "format_runs",
    "list_runs",
    "output_width",
    "read_run_row",
    "row_of",
    "show_prompts",
    "show_run",
    "since_time",
]

LIST_HINT = "pass a run folder such as runs/<run-id>; `flowrun runs` lists them"


# ------------------------------------------------------------------ reading a run folder


def _is_run_dir(path: Path) -> bool:
    return path.is_dir() and ((path / "events.jsonl").is_file() or (path / "run.json").is_file())


def _run_end(events: list[Event]) -> RunEndEvent | None:
    return next((e for e in reversed(events) if isinstance(e, RunEndEvent)), None)


def run_status(meta: RunRecord, events: list[Event]) -> str:
    """run.json's status, except that a run which says "running" but never logged run_end is
    "incomplete" (it crashed, was killed, or is still going)."""
    end = _run_end(events)
    status = meta.get("status") or (end.status if end else None)
    if end is None and status in (None, "running"):
        return "incomplete"
    return str(status)


def _run_cost(run_dir: Path, events: list[Event]) -> float | None:
    end = _run_end(events)
    usage = (end.usage if end else None) or read_json_object(run_dir / "usage.json")
    cost = usage.get("total_cost_usd")
    return float(cost) if cost is not None else None


def _span(events: list[Event]) -> tuple[float | None, float | None]:
    times = [e.t for e in events if e.t]
    if not times:
        return None, None
    return times[0], times[-1] - times[0]


def read_run_row(run_dir: Path) -> RunRow:
    """One run's line for `flowrun runs`."""
    return _row(
        run_dir, run_record(read_json_object(run_dir / "run.json")), read_events(run_dir / "events.jsonl")
    )


def _row(run_dir: Path, meta: RunRecord, events: list[Event]) -> RunRow:
    start = next((e for e in events if isinstance(e, RunStartEvent)), None)
    responses = [e for e in events if isinstance(e, ModelResponseEvent)]
    started, duration = _span(events)
    return RunRow(
        id=meta.get("run_id") or run_dir.name,
        path=run_dir,
        workflow=str(meta.get("workflow") or (start.workflow if start else "?")),
        status=run_status(meta, events),
        steps=len(responses),
        tokens=sum(e.response.usage.total for e in responses),
        cost_usd=_run_cost(run_dir, events),
        duration_s=duration,
        started=started if started is not None else meta.get("updated"),
        dry_run=(options := recorded_options(meta, start)).dry_run,
        options=options,
        inputs=dict(meta.get("inputs") or (start.inputs if start else {}) or {}),
    )


def recorded_options(meta: RunRecord, start: RunStartEvent | None) -> RunOptions:
    """The run's options from run.json, else from its run_start event (any layout); the
    defaults when neither can be read."""
    record = meta if "options" in meta or "dry_run" in meta else run_record(start.to_dict() if start else {})
    try:
        return RunOptions.from_record(record)
    except (FlowrunError, TypeError, ValueError):  # a damaged or hand-edited record
        return RunOptions()


# ------------------------------------------------------------------ formatting helpers


def _render(renderables: list[RenderableType], width: int, color: bool | None) -> str:
    """Render into a string; plain text (no escape codes) unless colour is asked for."""
    color = sys.stdout.isatty() if color is None else color
    buffer = StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=color,
        color_system="standard" if color else None,
        highlight=False,
        emoji=False,
        markup=False,
    )
    for renderable in renderables:
        console.print(renderable)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())


def _ms(start: float | None, end: float | None) -> str:
    if start is None or end is None:
        return "?"
    ms = (end - start) * 1000
    if ms < 10:
        return f"{ms:.1f} ms"
    return f"{ms:.0f} ms" if ms < 10_000 else format_duration(ms / 1000)


def _status(status: str) -> Text:
    return Text(status, style=STATUS_STYLE.get(status, ""))


# ------------------------------------------------------------------ the tree of one run


@dataclass
class CallNode:
    call_id: str
    tool: str
    arguments: object
    start: float | None
    end: float | None = None
    status: str | None = None
    error: str | None = None
    agents: list[AgentNode] = field(default_factory=list)  # agents this call ran (agent as tool)


@dataclass
class AgentNode:
    agent: str
    agent_id: str
    model: str
    start: float | None
    end: float | None = None
    status: str | None = None
    steps: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    items: list[TreeItem] = field(default_factory=list)  # in order
    open_calls: dict[str, CallNode] = field(default_factory=dict)
    cost_usd: float | None = None  # its own model calls (None: no priced call)
    budget: dict[str, float] | None = None  # a per-call budget (agent_start)

    def children(self) -> Iterator[AgentNode]:
        for item in self.items:
            if isinstance(item, AgentNode):
                yield item
            elif isinstance(item, CallNode):
                yield from item.agents

    def subtree(self) -> tuple[int, float | None]:
        """Tokens and cost of this agent and everything it called."""
        tokens, cost = sum(self.usage.values()), self.cost_usd
        for child in self.children():
            child_tokens, child_cost = child.subtree()
            tokens += child_tokens
            if child_cost is not None:
                cost = (cost or 0.0) + child_cost
        return tokens, cost


@dataclass
class IterationNode:
    loop: str
    iteration: int
    until_met: bool | None = None
    items: list[TreeItem] = field(default_factory=list)


# what a node of the tree holds: agents, tool calls, loop iterations and notes
TreeItem = AgentNode | CallNode | IterationNode | Text


class RunTree:
    """Folds the event stream into nested nodes. Nesting follows agent_start.parent; an agent
    started while its parent had an open call of the same name hangs under that call."""

    def __init__(self) -> None:
        self.roots: list[TreeItem] = []
        self.loops: list[IterationNode] = []
        self.agents: dict[str, AgentNode] = {}  # agent_id -> latest invocation
        self.start: RunStartEvent | None = None
        self.end: RunEndEvent | None = None
        self.notes: list[str] = []
        self.retries = 0
        self.calls = 0
        self.call_errors = 0

    def feed(self, event: Event) -> None:
        match event:
            case RunStartEvent():
                self.start = event
            case RunEndEvent():
                self.end = event
            case AgentStartEvent():
                self._agent_start(event)
            case AgentEndEvent():
                self._agent_end(event)
            case ModelResponseEvent():
                self._model_response(event)
            case ToolCallEvent():
                self._tool_call(event)
            case ToolResultEvent():
                self._tool_result(event)
            case _:
                self._notice(event)

    def _container(self) -> list[TreeItem]:
        return self.loops[-1].items if self.loops else self.roots

    def _agent_start(self, e: AgentStartEvent) -> None:
        node = AgentNode(e.agent, e.agent_id, e.model or "?", e.t, budget=e.budget)
        parent = self.agents.get(e.parent or "")
        if parent is None:
            self._container().append(node)
        else:
            calls = [c for c in parent.open_calls.values() if c.tool == node.agent]
            (calls[-1].agents if calls else parent.items).append(node)
        self.agents[node.agent_id] = node

    def _agent_end(self, e: AgentEndEvent) -> None:
        node = self.agents.get(e.agent_id)
        if node is not None:
            node.end, node.status = e.t, e.status
            node.steps = e.steps if e.steps is not None else node.steps
            if e.error:
                node.items.append(Text(f"error: {_short(e.error, 200)}", style="red"))

    def _model_response(self, e: ModelResponseEvent) -> None:
        node = self.agents.get(e.agent_id)
        if node is None:
            return
        node.steps = max(node.steps, e.step)
        if e.cost_usd is not None:
            node.cost_usd = (node.cost_usd or 0.0) + e.cost_usd
        usage = e.response.usage
        for key, value in (
            ("input_tokens", usage.input_tokens),
            ("output_tokens", usage.output_tokens),
            ("cache_read_tokens", usage.cache_read_tokens),
            ("cache_write_tokens", usage.cache_write_tokens),
        ):
            node.usage[key] = node.usage.get(key, 0) + value

    def _tool_call(self, e: ToolCallEvent) -> None:
        node = self.agents.get(e.agent_id)
        if node is None:
            return
        call = CallNode(e.call_id, e.tool, e.arguments, e.t)
        node.items.append(call)
        node.open_calls[call.call_id] = call
        self.calls += 1

    def _tool_result(self, e: ToolResultEvent) -> None:
        node = self.agents.get(e.agent_id)
        call = node.open_calls.pop(e.call_id, None) if node else None
        if call is None:
            return
        call.end, call.status = e.t, e.result.status
        if call.status == "error":
            self.call_errors += 1
            error = e.result.error
            code, message = (error.code, error.message) if error else ("ERROR", "")
            call.error = f"{code}: {_short(message, 100)}"

    def _notice(self, e: Event) -> None:
        match e:
            case ErrorEvent():
                node = self.agents.get(e.agent_id or "")
                message = f"error ({e.where}): {_short(e.message, 200)}"
                if node is not None:
                    node.items.append(Text(message, style="red"))
                else:
                    self.notes.append(message)
            case ContextResetEvent():
                if (reset := self.agents.get(e.agent_id)) is not None:
                    text = f"context reset: {e.messages_before} → {e.messages_after} messages"
                    reset.items.append(Text(text, style="dim"))
            case BudgetExceededEvent():
                self.notes.append(f"budget exceeded ({e.limit}): {e.message}")
            case ModelRetryEvent():
                self.retries += 1
            case IterationStartEvent():
                node_i = IterationNode(e.loop, e.iteration)
                self._container().append(node_i)
                self.loops.append(node_i)
            case IterationEndEvent():
                if self.loops:
                    self.loops.pop().until_met = e.until_met
            case _:
                self._other_note(e)

    def _other_note(self, e: Event) -> None:
        """A fan-out or a skipped step in the tree; a fallback switch, an invalid answer or a
        used-up per-call budget under its agent."""
        note = _step_note(e)
        if note is not None:
            self._container().append(note)
            return
        node = self.agents.get(getattr(e, "agent_id", None) or "")
        text = _agent_note(e)
        if node is not None and text is not None:
            node.items.append(Text(text, style="yellow"))
        elif text is not None and isinstance(e, HookEvent):  # the run's own (SessionStart, ...)
            self.notes.append(text)


def _hook_note(e: HookEvent) -> str:
    """One hook run: its event, command, how it answered and what flowrun made of it."""
    answered = f"failed: {e.failure}" if e.failure else f"exit {e.exit_code}"
    decided = f" → {e.decision}" if e.decision != "none" else ""
    why = f": {_short(e.reason, 100)}" if e.reason and e.decision != "none" else ""
    again = " (recorded)" if e.replayed else ""
    return f"hook {e.event} {_short(e.command, 50)} · {answered}{decided}{why}{again}"


def _guardrail_note(e: GuardrailEvent) -> str:
    """One verdict: which guardrail, on what, and what it did."""
    on = f" on {e.tool}" if e.tool else f" on the {e.where}"
    why = f": {_short(e.reason, 100)}" if e.reason else ""
    left = (
        f" ({e.retries_left} retr{'y' if e.retries_left == 1 else 'ies'} left)" if e.action == "retry" else ""
    )
    again = " (recorded)" if e.replayed else ""
    return f"guardrail {e.guardrail} ({e.kind}){on} · {e.action}{left}{why}{again}"


def _agent_note(e: Event) -> str | None:
    if isinstance(e, HookEvent):
        return _hook_note(e)
    if isinstance(e, GuardrailEvent):
        return _guardrail_note(e)
    if isinstance(e, ModelFallbackEvent):
        return f"model call {e.step}: {e.from_model} → {e.to_model} ({_short(e.reason, 100)})"
    if isinstance(e, OutputInvalidEvent):
        return (
            f"answer does not match output_schema ({e.repairs_left} repair(s) left): {_short(e.problem, 100)}"
        )
    if isinstance(e, CallBudgetExceededEvent):
        spent = f"{e.tokens:,} tokens, {format_cost(e.cost_usd)}, {e.model_calls} call(s)"
        return f"{_short(e.message, 120)}: {spent}"
    return None


def _step_note(e: Event) -> Text | None:
    """A line for a step that ran branches, or one that an `if:` skipped."""
    if isinstance(e, FanoutStartEvent):
        into = f" → {e.collect}" if e.collect else ""
        text = f"{e.kind} {e.step}: {e.branches} branch(es), {e.concurrency} at a time{into}"
        return Text(text, style="magenta")
    if isinstance(e, StepConditionEvent) and not e.met:
        why = f" ({_short(e.message, 100)})" if e.message else ""
        return Text(f"skipped {e.step}: if {_short(e.condition, 60)} not met{why}", style="dim")
    return None


def _arguments(arguments: object, limit: int = 60) -> str:
    if isinstance(arguments, dict):
        text = ", ".join(f"{k}={_short(v, 40)}" for k, v in arguments.items())
    else:
        text = str(arguments or "")
    return _short(text, limit)


def _tokens(usage: dict[str, int]) -> str:
    total = sum(usage.values())
    parts = f"{usage.get('input_tokens', 0):,} in / {usage.get('output_tokens', 0):,} out"
    if usage.get("cache_read_tokens"):
        parts += f" / {usage['cache_read_tokens']:,} cached"
    return f"{total:,} tokens ({parts})"


def _agent_label(node: AgentNode, run_ended: bool) -> Text:
    # no agent_end: the run crashed, or the agent failed with an engine error, or it is still running
    status = node.status or ("unfinished" if run_ended else "running?")
    label = Text.assemble((node.agent, "bold"), f" ({node.model}) ", _status(status))
    label.append(f" · {node.steps} step(s) · {_tokens(node.usage)} · {_ms(node.start, node.end)}")
    if node.budget:
        limits = ", ".join(f"{k.removeprefix('max_')} {v:g}" for k, v in node.budget.items())
        label.append(f" · budget {limits}", style="yellow" if node.status == "budget_exceeded" else "")
    if any(True for _ in node.children()):
        tokens, cost = node.subtree()
        label.append(f" · sub-tree {tokens:,} tokens, {format_cost(cost)}")
    return label


def _call_label(call: CallNode) -> Text:
    mark = {"success": "✓", "partial": "~", "error": "✗"}.get(call.status or "", "…")
    label = Text.assemble((f"{mark} ", STATUS_STYLE.get(call.status or "", "")), (call.tool, "bold"))
    label.append(f" {_arguments(call.arguments)}" if call.arguments else "")
    if call.status is None:
        label.append(" · no result", style="yellow")
    else:
        label.append(f" · {_ms(call.start, call.end)}")
        if call.status == "partial":
            label.append(" · partial", style=STATUS_STYLE["partial"])
    if call.error:
        label.append(f" · {call.error}", style="red")
    return label


def _add_items(tree: Tree, items: Sequence[TreeItem], run_ended: bool) -> None:
    for item in items:
        if isinstance(item, AgentNode):
            _add_items(tree.add(_agent_label(item, run_ended)), item.items, run_ended)
        elif isinstance(item, CallNode):
            branch = tree.add(_call_label(item))
            _add_items(branch, item.agents, run_ended)
        elif isinstance(item, IterationNode):
            until = " · until met" if item.until_met else ""
            label = Text(f"iteration {item.iteration} of {item.loop}{until}", style="magenta")
            _add_items(tree.add(label), item.items, run_ended)
        else:
            tree.add(item)


def _summary(run_dir: Path, tree: RunTree, events: list[Event]) -> list[str]:
    meta = run_record(read_json_object(run_dir / "run.json"))
    row = _row(run_dir, meta, events)
    usage: dict[str, int] = {}
    for node in tree.agents.values():
        for key, value in node.usage.items():
            usage[key] = usage.get(key, 0) + value
    workflow_file = meta.get("workflow_file") or (tree.start.workflow_file if tree.start else "?")
    inputs = meta.get("inputs") or (tree.start.inputs if tree.start else {})
    lines = [
        f"status: {row.status}"
        + ("" if tree.end else " (no run_end event: the run crashed, was killed, or is still running)"),
        f"workflow: {row.workflow} ({workflow_file})" + (", dry run" if row.dry_run else ""),
        "inputs: " + (", ".join(f"{k}={_short(v, 60)}" for k, v in inputs.items()) or "(none)"),
        f"duration: {format_duration(row.duration_s)} (first to last of {len(events)} events)",
        f"model steps: {row.steps} · {_tokens(usage) if usage else '0 tokens'} · "
        f"cost {format_cost(row.cost_usd)}" + (f" · {tree.retries} model retries" if tree.retries else ""),
        f"tool calls: {tree.calls} ({tree.call_errors} errors)",
    ]
    if row.options is not None and (options := row.options.summary()):
        lines.append(f"options: {options}")
    if output := meta.get("output"):
        written = (run_dir / output).exists()
        lines.append(f"output: {output}" + ("" if written else " (not written)"))
    lines.extend(tree.notes)
    if row.status == "waiting":
        lines.extend(waiting_lines(run_dir, meta))
    message = tree.end.message if tree.end else ""
    if row.status not in ("completed", "incomplete", "waiting") and message:
        lines.append(f"message: {_short(message.splitlines()[0], 300)}")
    return lines


def waiting_lines(run_dir: Path, meta: Mapping[str, object]) -> list[str]:
    """What a waiting run waits for (run.json's `pending`), and how to decide."""
    from flowrun.runtime.durable.decisions import handle, how_to_decide, pending_in_meta

    pending = pending_in_meta(meta)
    lines = [f"waiting for: {handle(p, pending)}: {p.describe()}" for p in pending]
    if not pending:
        return [f"waiting: its decisions are taken; continue with `flowrun resume {run_dir}`"]
    return [*lines, how_to_decide(run_dir, pending)]


def show_run(run_dir: Path, *, width: int = 120, color: bool | None = None) -> str:
    """One run as a tree of agents (nested as they called each other) with their tool calls and
    timings, then a summary. Plain text unless `color` (default: stdout is a TTY)."""
    if not run_dir.is_dir():
        raise RunError(f"{run_dir} is not a folder", LIST_HINT)
    if not (run_dir / "events.jsonl").is_file():
        raise RunError(f"{run_dir} has no events.jsonl, so it is not a flowrun run folder", LIST_HINT)
    events = read_events(run_dir / "events.jsonl")
    if not events:
        raise RunError(
            f"{run_dir}/events.jsonl holds no events",
            "the run stopped before its first event; see flowrun.log in that folder if present",
        )
    tree = RunTree()
    for event in events:
        tree.feed(event)
    root = Tree(Text.assemble(("run ", "bold"), (run_dir.name, "bold cyan")))
    _add_items(root, tree.roots, tree.end is not None)
    return _render([root, "", *_summary(run_dir, tree, events)], width, color)


# ------------------------------------------------------------------ what each agent was told


def show_prompts(run_dir: Path, agent: str | None = None) -> str:
    """Each agent instance's rendered system prompt and tool list, from its `agent_prompt`
    event, in the order the instances started; `agent` keeps one agent's instances."""
    if not (run_dir / "events.jsonl").is_file():
        raise RunError(f"{run_dir} has no events.jsonl, so it is not a flowrun run folder", LIST_HINT)
    found = [e for e in read_events(run_dir / "events.jsonl") if isinstance(e, AgentPromptEvent)]
    if not found:
        raise RunError(f"{run_dir} records no prompts", "runs made before flowrun recorded prompts have none")
    names = sorted({e.agent for e in found})
    if agent is not None:
        found = [e for e in found if e.agent == agent]
        if not found:
            raise RunError(f"no agent '{agent}' in {run_dir}", "its agents: " + ", ".join(names))
    blocks: list[str] = []
    for event in found:
        rule = f"── {event.agent_id} · agent {event.agent} · model {event.model} "
        tools = [f"  - {t['name']}: {_short(t.get('description', ''), 100)}" for t in event.tools]
        blocks.append(
            "\n".join(
                [rule.ljust(100, "─"), event.system, "", f"tools ({len(event.tools)}):", *tools]
                if tools
                else [rule.ljust(100, "─"), event.system, "", "tools: (none)"]
            )
        )
    return "\n\n".join(blocks)
