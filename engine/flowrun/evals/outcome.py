"""What a case's run left, as the graders read it: its status and final message, the declared
output, its tool calls (events.jsonl, sub-agents included), its model calls, its wall time (from
its log) and its usage (usage.json: tokens, and the cost, None when its models have no price)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from flowrun.events import (
    Event,
    ModelResponseEvent,
    RunEndEvent,
    RunResumedEvent,
    RunStartEvent,
    ToolCallEvent,
)
from flowrun.pinned import read_checked, read_json_object
from flowrun.runtime.durable.event_log import read_events

MAX_FILE_BYTES = 10_000_000  # what a grader reads of a file of the run


def run_file_text(run_dir: Path, name: str, limit: int) -> str | None:
    """The first `limit` bytes of a file of the run folder as text; None when it is missing,
    outside the folder or not a regular file. An agent's file is never read whole into memory
    (a sparse file can claim any size)."""
    root = run_dir.resolve()
    path = (root / name).resolve()
    if not path.is_relative_to(root):
        return None
    try:
        return read_checked(path, limit, cut=True).decode("utf-8", errors="replace")
    except OSError:
        return None


@dataclass(frozen=True, slots=True)
class ToolCall:
    agent: str
    tool: str
    arguments: dict[str, object]


@dataclass(slots=True)
class Outcome:
    run_dir: Path
    status: str
    message: str  # the final answer, or what went wrong
    declared_output: str | None  # the workflow's `output`, relative to the run folder
    calls: list[ToolCall] = field(default_factory=list)
    steps: int = 0  # model calls over all agents
    total_tokens: int = 0
    cost_usd: float | None = None
    seconds: float | None = None  # wall time, each attempt's added up (None: it never began)

    def file_text(self, name: str) -> str | None:
        """A file of the run folder, its first MAX_FILE_BYTES (see run_file_text)."""
        return run_file_text(self.run_dir, name, MAX_FILE_BYTES)

    def output_text(self, file: str | None = None) -> tuple[str | None, str]:
        """(text, what it is) of `file`, else the declared output, else the final answer."""
        name = file or self.declared_output
        if name is None:
            return self.message, "the final answer"
        return self.file_text(name), name


def read_outcome(run_dir: Path, declared_output: str | None) -> Outcome:
    """The outcome of the run in `run_dir` (a run that never began: failed, with no events)."""
    events = read_events(run_dir / "events.jsonl")
    status, message = "failed", "the run did not start"
    status = str(read_json_object(run_dir / "run.json").get("status") or status)
    calls: list[ToolCall] = []
    steps = 0
    for event in events:
        if isinstance(event, ToolCallEvent):
            calls.append(ToolCall(event.agent, event.tool, dict(event.arguments)))
        elif isinstance(event, ModelResponseEvent):
            steps += 1
        elif isinstance(event, RunEndEvent):
            status, message = event.status, event.message
    usage = read_json_object(run_dir / "usage.json")
    cost = usage.get("total_cost_usd", usage.get("cost_usd"))
    return Outcome(
        run_dir=run_dir,
        status=status,
        message=message,
        declared_output=declared_output,
        calls=calls,
        steps=steps,
        total_tokens=_tokens(usage.get("total_tokens")),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
        seconds=wall_time(events),
    )


def wall_time(events: list[Event]) -> float | None:
    """How long a run ran, from its log: from each attempt's start (`run_start`, `run_resumed`)
    to its `run_end` (or its last event: killed), added up; None for a log with no start."""
    total, start, began = 0.0, None, False
    for event in events:
        if isinstance(event, RunStartEvent | RunResumedEvent):
            began = True
            start = event.t if start is None else start
        elif isinstance(event, RunEndEvent) and start is not None:
            total, start = total + event.t - start, None
    if start is not None:
        total += events[-1].t - start
    return round(total, 3) if began else None


def _tokens(value: object) -> int:
    return int(value) if isinstance(value, int | float) else 0
