"""Progress on stderr, read from the event stream (the loop itself prints nothing).

On a terminal: a rich Live panel of the agents at work (step, running tool, tokens) with the
run's totals, and milestone lines (agent start/end, errors) scrolling above it. Otherwise:
plain one-line logs. Verbosity -1 shows nothing, 0 the milestones and tool calls, 1 also model
steps and tool results. Subscribers run synchronously in the emitter's thread (maybe a worker
thread), so they only update state under a lock; rendering happens on Live's refresh thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from flowrun.events import (
    AgentEndEvent,
    AgentStartEvent,
    ApprovalEvent,
    ErrorEvent,
    Event,
    ModelRequestEvent,
    ModelResponseEvent,
    RunEndEvent,
    ToolCallEvent,
    ToolResultEvent,
)

Shorten = Callable[[object, int], str]  # redacts, then cuts (cutting first could split a secret)


def _short(value: object, limit: int = 80) -> str:
    text = str(value).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shortener(redact: Callable[[str], str]) -> Shorten:
    return lambda value, limit: _short(redact(str(value)), limit)


VERBOSE_LIMIT = 2000  # -v: an answer or a call's arguments up to this many characters
MORE = "… (cut: `flowrun show RUN --messages` shows all)"


def _verbose_text(text: str, redact: Callable[[str], str]) -> str:
    """An answer or arguments for -v: redacted, then cut (whole lines kept, indented)."""
    text = redact(text.strip())
    if len(text) > VERBOSE_LIMIT:
        text = text[:VERBOSE_LIMIT] + MORE
    return text.replace("\n", "\n      ")


def _arguments_json(arguments: object) -> str:
    import json

    try:
        return json.dumps(arguments, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(arguments)


# ------------------------------------------------------------------ one-line logs


def event_line(event: Event, verbosity: int, redact: Callable[[str], str] = str) -> str | None:
    """The one-line log for an event at this verbosity, or None."""
    short = shortener(redact)
    match event:
        case AgentStartEvent():
            return f"▶ {event.agent} started ({event.model}): {short(event.task, 60)}"
        case AgentEndEvent():
            steps = event.steps if event.steps is not None else "?"
            line = f"■ {event.agent} {event.status} after {steps} step(s)"
            return line + (f": {short(event.error, 100)}" if event.error else "")
        case ToolCallEvent():
            return _call_line(event, verbosity, redact)
        case ToolResultEvent():
            if verbosity < 1 and event.result.status != "error":
                return None
            return f"  {event.agent} ← {event.tool}: {event.result.status} {short(event.result.text, 70)}"
        case ModelResponseEvent():
            return _answer_line(event, redact) if verbosity >= 1 else None
        case ApprovalEvent():
            return f"  {short(event.describe(), 160)}"
        case ErrorEvent(where="run"):
            return None  # the command's own last line says it (`error: ...`)
    level = event.level()
    if not level:
        return None
    return ("! " if level in ("warn", "error") else "· ") + short(event.describe(), 160)


def _call_line(event: ToolCallEvent, verbosity: int, redact: Callable[[str], str]) -> str:
    if verbosity >= 1:  # the whole arguments, as the model sent them
        return f"  {event.agent} → {event.tool} {_verbose_text(_arguments_json(event.arguments), redact)}"
    return f"  {event.agent} → {event.tool}({shortener(redact)(event.arguments, 60)})"


def _answer_line(event: ModelResponseEvent, redact: Callable[[str], str]) -> str:
    """-v: a model step's tokens and time, then what the agent said."""
    usage = event.response.usage
    line = (
        f"  {event.agent} model step {event.step}: {usage.input_tokens} in / "
        f"{usage.output_tokens} out, {event.latency_ms} ms"
    )
    if event.response.text.strip() and not event.purpose:
        line += f"\n  {event.agent}: {_verbose_text(event.response.text, redact)}"
    return line


# what the Live panel already shows, so at normal verbosity it is not also printed as a line
SHOWN_LIVE: tuple[type[Event], ...] = (ToolCallEvent,)


# ------------------------------------------------------------------ live state


@dataclass
class AgentState:
    name: str
    depth: int
    model: str
    step: int = 0
    tokens: int = 0
    waiting_model: bool = False
    tools: dict[str, str] = field(default_factory=dict)  # call_id -> "tool(args)"


class Progress:
    """An event subscriber (pass it as `on_event`); `close()` stops the live display."""

    def __init__(
        self, verbosity: int, console: Console, live: bool, redact: Callable[[str], str] = str
    ) -> None:
        self.verbosity = verbosity
        self.console = console
        self.use_live = live
        self.live: Live | None = None
        self.closed = False
        self.started: float | None = None
        self.agents: dict[str, AgentState] = {}  # running agents by agent_id
        self.finished = 0
        self.tokens = 0
        self.cost: float | None = None
        self._refreshed = 0.0
        self._paused = 0
        # reentrant: building and starting Live (under this lock) already calls render()
        self._lock = threading.RLock()
        self.redact = redact

    def __call__(self, event: Event) -> None:
        with self._lock:
            if self.closed:
                return
            if self.started is None:
                self.started = time.monotonic()
            self._update(event)
            live = self._ensure_live() if self.use_live and not self._paused else None
        line = event_line(event, self.verbosity, self.redact)
        if line and not (live and self.verbosity < 1 and isinstance(event, SHOWN_LIVE)):
            self._print(line, live)
        if isinstance(event, RunEndEvent):
            self.close()

    def note(self, line: str) -> None:
        """A line of the command's own (not an event's), printed like a milestone."""
        with self._lock:
            if self.closed:
                return
            live = self._ensure_live() if self.use_live and not self._paused else None
        self._print(line, live)

    def _print(self, line: str, live: Live | None) -> None:
        if live is not None:
            # one screen line per milestone (the full text is in events.jsonl); -v prints whole
            # answers and arguments, wrapped
            cut = self.verbosity < 1
            live.console.print(
                Text(line), no_wrap=cut, overflow="ellipsis" if cut else "fold", highlight=False
            )
            # without this the panel under the new line lags up to 1/4 s; throttled for verbose runs
            now = time.monotonic()
            if now - self._refreshed > 0.1:
                self._refreshed = now
                live.refresh()
            return
        with self._lock:  # whole lines, even when agents emit from several threads
            out = self.console.file  # stderr by default, looked up now (it may be swapped)
            out.write(line + "\n")
            out.flush()

    def _ensure_live(self) -> Live:
        if self.live is None:
            self.live = Live(
                console=self.console,
                get_renderable=self.render,
                transient=True,
                refresh_per_second=4,
                redirect_stdout=False,  # stdout may be a pipe while stderr is the terminal
            )
            self.live.start()
        return self.live

    @contextmanager
    def paused(self) -> Iterator[None]:
        """The live panel taken off the terminal (for a question or a warning), then back."""
        with self._lock:
            self._paused += 1
            live, self.live = self.live, None
        if live is not None:
            live.stop()
        try:
            yield
        finally:
            with self._lock:
                self._paused -= 1

    def close(self) -> None:
        with self._lock:
            self.closed = True
            live, self.live = self.live, None
        if live is not None:
            live.stop()

    # -------------------------------------------------------------- state (caller holds the lock)

    def _update(self, e: Event) -> None:
        if isinstance(e, AgentStartEvent):
            parent = self.agents.get(e.parent or "")
            self.agents[e.agent_id] = AgentState(e.agent, parent.depth + 1 if parent else 0, e.model)
        elif isinstance(e, AgentEndEvent):
            if self.agents.pop(e.agent_id, None) is not None:
                self.finished += 1
        elif (agent := self.agents.get(e.agent_key or "")) is not None:
            self._update_agent(agent, e)
        if isinstance(e, ModelResponseEvent):
            self.tokens += e.response.usage.total
            if e.cost_usd is not None:
                self.cost = (self.cost or 0.0) + e.cost_usd

    def _update_agent(self, agent: AgentState, e: Event) -> None:
        if isinstance(e, ModelRequestEvent):
            agent.step, agent.waiting_model = e.step or agent.step, True
        elif isinstance(e, ModelResponseEvent):
            agent.waiting_model = False
            agent.tokens += e.response.usage.total
        elif isinstance(e, ToolCallEvent):
            agent.tools[e.call_id] = f"{e.tool}({_short(self.redact(str(e.arguments)), 40)})"
        elif isinstance(e, ToolResultEvent):
            agent.tools.pop(e.call_id, None)

    # -------------------------------------------------------------- rendering

    def render(self) -> Group:
        """The Live panel: one row per running agent, then the run's totals."""
        with self._lock:
            table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
            table.add_column("agent", no_wrap=True, max_width=30, overflow="ellipsis")
            table.add_column("step", justify="right", min_width=4)
            # the one column that gives way on a narrow terminal
            doing_width = max(16, min(80, self.console.width - 50))
            table.add_column("doing", overflow="ellipsis", no_wrap=True, max_width=doing_width)
            table.add_column("tokens", justify="right", min_width=7)
            for state in self.agents.values():
                if state.tools:
                    doing = Text("running " + ", ".join(state.tools.values()), style="cyan")
                elif state.waiting_model:
                    doing = Text(f"waiting for {state.model}", style="dim")
                else:
                    doing = Text("")
                name = Text("  " * state.depth + state.name, style="bold")
                table.add_row(name, str(state.step), doing, f"{state.tokens:,}")
            elapsed = time.monotonic() - self.started if self.started is not None else 0.0
            cost = f"${self.cost:.4f}" if self.cost is not None else "cost n/a"
            totals = Text(
                f"{elapsed:.0f} s · {len(self.agents)} working, {self.finished} done · "
                f"{self.tokens:,} tokens · {cost}",
                style="dim",
            )
        return Group(table, totals)


def make_progress(
    verbosity: int, redact: Callable[[str], str], console: Console | None = None, live: bool = True
) -> Progress | None:
    """The progress subscriber for a run (None at verbosity -1). A Live panel is used when the
    console is a terminal (default console: stderr) and `live` is not turned off."""
    if verbosity < 0:
        return None
    console = console or Console(stderr=True)
    return Progress(verbosity, console, live=live and console.is_terminal, redact=redact)
