"""Progress on stderr, read from the event stream (the loop itself prints nothing).

On a terminal: a rich Live panel of the agents at work (step, running tool, tokens) with the
run's totals, and milestone lines (agent start/end, errors) scrolling above it. Otherwise:
plain one-line logs. Verbosity -1 shows nothing, 0 the milestones and tool calls, 1 also model
steps and tool results. Subscribers run synchronously in the emitter's thread (maybe a worker
thread), so they only update state under a lock; rendering happens on Live's refresh thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

Event = dict[str, Any]


Shorten = Callable[[Any, int], str]  # redacts, then cuts (cutting first could split a secret)


def _short(value: Any, limit: int = 80) -> str:
    text = str(value).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shortener(redact: Callable[[str], str]) -> Shorten:
    return lambda value, limit: _short(redact(str(value)), limit)


# ------------------------------------------------------------------ one-line logs


def _agent_start(e: Event, verbosity: int, short: Shorten) -> str:
    return f"▶ {e.get('agent')} started ({e.get('model')}): {short(e.get('task', ''), 60)}"


def _agent_end(e: Event, verbosity: int, short: Shorten) -> str:
    line = f"■ {e.get('agent')} {e.get('status')} after {e.get('steps', '?')} step(s)"
    return line + (f": {short(e['error'], 100)}" if e.get("error") else "")


def _tool_call(e: Event, verbosity: int, short: Shorten) -> str:
    return f"  {e.get('agent')} → {e.get('tool')}({short(e.get('arguments', ''), 60)})"


def _tool_result(e: Event, verbosity: int, short: Shorten) -> str | None:
    result = e.get("result") or {}
    if verbosity < 1 and result.get("status") != "error":
        return None
    text = short(result.get("text", ""), 70)
    return f"  {e.get('agent')} ← {e.get('tool')}: {result.get('status')} {text}"


def _model_response(e: Event, verbosity: int, short: Shorten) -> str | None:
    if verbosity < 1:
        return None
    usage = (e.get("response") or {}).get("usage") or {}
    return (
        f"  {e.get('agent')} model step {e.get('step')}: {usage.get('input_tokens', 0)} in / "
        f"{usage.get('output_tokens', 0)} out, {e.get('latency_ms')} ms"
    )


def _model_retry(e: Event, verbosity: int, short: Shorten) -> str:
    reason = short(e.get("reason"), 100)
    return f"! model {e.get('model')} retry {e.get('retry')} in {e.get('delay_s')} s: {reason}"


def _notice(e: Event, verbosity: int, short: Shorten) -> str:
    fields = {k: v for k, v in e.items() if k not in ("seq", "t", "type")}
    return f"! {e['type']}: {short(fields, 120)}"


LINES: dict[str, Callable[[Event, int, Shorten], str | None]] = {
    "agent_start": _agent_start,
    "agent_end": _agent_end,
    "tool_call": _tool_call,
    "tool_result": _tool_result,
    "model_response": _model_response,
    "model_retry": _model_retry,
    "error": _notice,
    "budget_exceeded": _notice,
    "context_reset": _notice,
    "iteration_start": _notice,
}
# what the Live panel already shows, so at normal verbosity it is not also printed as a line
SHOWN_LIVE = frozenset({"tool_call"})


def event_line(event: Event, verbosity: int, redact: Callable[[str], str] = str) -> str | None:
    """The one-line log for an event at this verbosity, or None."""
    format_line = LINES.get(event.get("type", ""))
    return format_line(event, verbosity, shortener(redact)) if format_line else None


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
    """The subscriber attach_progress installs; `close()` stops the live display."""

    def __init__(self, run: Any, verbosity: int, console: Console, live: bool) -> None:
        self.run = run
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
        # reentrant: building and starting Live (under this lock) already calls render()
        self._lock = threading.RLock()
        redactor = getattr(run, "redactor", None)
        self.redact: Callable[[str], str] = redactor.text if redactor is not None else str

    def __call__(self, event: Event) -> None:
        with self._lock:
            if self.closed:
                return
            if self.started is None:
                self.started = time.monotonic()
            self._update(event)
            live = self._ensure_live() if self.use_live else None
        line = event_line(event, self.verbosity, self.redact)
        if line and not (live and self.verbosity < 1 and event.get("type") in SHOWN_LIVE):
            self._print(line, live)
        if event.get("type") == "run_end":
            self.close()

    def _print(self, line: str, live: Live | None) -> None:
        if live is not None:
            # one screen line per milestone; the full text is in events.jsonl
            live.console.print(Text(line), no_wrap=True, overflow="ellipsis", highlight=False)
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

    def close(self) -> None:
        with self._lock:
            self.closed = True
            live, self.live = self.live, None
        if live is not None:
            live.stop()

    # -------------------------------------------------------------- state (caller holds the lock)

    def _update(self, e: Event) -> None:
        kind = e.get("type")
        agent = self.agents.get(e.get("agent_id", ""))
        if kind == "agent_start":
            parent = self.agents.get(e.get("parent") or "")
            self.agents[str(e.get("agent_id"))] = AgentState(
                str(e.get("agent")), parent.depth + 1 if parent else 0, str(e.get("model", ""))
            )
        elif kind == "agent_end":
            if self.agents.pop(e.get("agent_id", ""), None) is not None:
                self.finished += 1
        elif agent is not None:
            self._update_agent(agent, e)
        if kind in ("model_response", "run_end"):
            self._read_totals()

    def _update_agent(self, agent: AgentState, e: Event) -> None:
        kind = e.get("type")
        if kind == "model_request":
            agent.step, agent.waiting_model = int(e.get("step") or agent.step), True
        elif kind == "model_response":
            agent.waiting_model = False
            usage = (e.get("response") or {}).get("usage") or {}
            agent.tokens += sum(int(v or 0) for v in usage.values())
        elif kind == "tool_call":
            args = _short(self.redact(str(e.get("arguments", ""))), 40)
            agent.tools[str(e.get("call_id"))] = f"{e.get('tool')}({args})"
        elif kind == "tool_result":
            agent.tools.pop(str(e.get("call_id")), None)

    def _read_totals(self) -> None:
        usage = getattr(self.run, "usage", None)
        if usage is None:
            return
        try:  # the usage book may be growing in another thread; the next event refreshes it
            self.tokens = int(usage.total_tokens)
            self.cost = float(usage.total_cost) if usage.priced else None
        except RuntimeError:
            pass

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


def attach_progress(run: Any, verbosity: int, *, console: Console | None = None) -> None:
    """Append the progress subscriber to `run.subscribers` (nothing at verbosity -1). A Live
    panel is used when the console is a terminal (default console: stderr)."""
    if verbosity < 0:
        return
    console = console or Console(stderr=True)
    run.subscribers.append(Progress(run, verbosity, console, live=console.is_terminal))


def detach_progress(run: Any) -> None:
    """Stop the live display (if any) and unsubscribe; safe to call twice or after run_end."""
    events = getattr(run, "events", None)
    for subscribers in (run.subscribers, getattr(events, "subscribers", None)):
        for subscriber in list(subscribers or []):
            if isinstance(subscriber, Progress):
                subscriber.close()
                subscribers.remove(subscriber)
