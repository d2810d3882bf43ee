"""The engine's own log for one run, in `run_dir/flowrun.log`. events.jsonl stays the record of
what the agents did; this file says what the engine did: INFO for the run's milestones, WARNING
and ERROR where they belong, and at DEBUG (`-v`, or FLOWRUN_LOG=debug) one line per event. A
failed tool call is a WARNING; a model failure that ends the run is logged once (where the call
failed).

Lines look like the stdlib `logging` module's and use its levels, but no logger is registered,
so a program that runs workflows through the API keeps its logging configuration untouched.
Every line passes through the run's redaction before it is written."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from flowrun.events import (
    AgentEndEvent,
    BudgetExceededEvent,
    ErrorEvent,
    Event,
    ModelRequestEvent,
    ModelResponseEvent,
    ModelRetryEvent,
    RunEndEvent,
    RunStartEvent,
    SeedKeptEvent,
    ToolCallEvent,
    ToolResultEvent,
    UntilErrorEvent,
)

LOG_NAME = "flowrun.log"
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
WARNINGS: tuple[type[Event], ...] = (ModelRetryEvent, BudgetExceededEvent, UntilErrorEvent)
MILESTONES: tuple[type[Event], ...] = (RunStartEvent, RunEndEvent, AgentEndEvent, SeedKeptEvent)


def log_level(verbosity: int) -> int:
    """INFO by default; DEBUG with -v or FLOWRUN_LOG=debug."""
    wanted = os.environ.get("FLOWRUN_LOG", "").lower()
    if verbosity > 0 or wanted == "debug":
        return logging.DEBUG
    return logging.WARNING if wanted in ("warning", "error") else logging.INFO


class RunLog:
    """The run's log file; `on_event` is the subscriber that writes one line per event. Each
    line is redacted, written and flushed at once (a crash loses nothing); a line that cannot
    be written is dropped quietly. Written directly, not through `logging`: a record, a handler
    and a formatter per line cost a batch item more CPU than the rest of its log."""

    def __init__(self, run_dir: Path, verbosity: int, redact: Callable[[str], str]) -> None:
        """`run_dir` exists: its lock's holder made it. The file is a bare descriptor written
        with one system call per line (no buffer to flush, no text layer to set up per run)."""
        self.level_wanted = log_level(verbosity)
        self.redact = redact
        self._fd: int | None = os.open(run_dir / LOG_NAME, _FLAGS, 0o666)
        self.model_errors: set[str] = set()  # failures already logged where the model call failed

    def on_event(self, event: Event) -> None:
        level = self.level(event)
        if level >= self.level_wanted:  # formatting costs nothing unless the line is kept
            self.write(level, describe_event(event))

    def write(self, level: int, message: str) -> None:
        if self._fd is None:
            return
        now = time.time()
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
        line = f"{stamp}.{int(now * 1000) % 1000:03d} | {logging.getLevelName(level):<7} | {message}"
        data = (self.redact(line) + "\n").encode("utf-8", "backslashreplace")
        try:
            while data:  # (a regular file takes it whole; a full disk may take part of it)
                data = data[os.write(self._fd, data) :]
        except OSError:
            pass  # a full disk loses the engine's log lines, not the run (events.jsonl says it)

    def level(self, event: Event) -> int:
        if isinstance(event, ErrorEvent):
            if event.where == "model":
                self.model_errors.add(event.message)
            elif event.where == "run" and event.message in self.model_errors:
                return logging.DEBUG  # the run ends on the model failure logged just before
            return logging.ERROR
        if isinstance(event, WARNINGS) or (
            isinstance(event, ToolResultEvent) and event.result.status == "error"
        ):
            return logging.WARNING
        if isinstance(event, MILESTONES):
            return logging.INFO
        return logging.DEBUG

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def describe_event(event: Event) -> str:
    """A one-line summary of an event (the full event is in events.jsonl)."""
    parts = [f"#{event.seq}", event.type]
    if who := event.agent_key or getattr(event, "agent", None):
        parts.append(str(who))
    if isinstance(event, ToolCallEvent | ToolResultEvent):
        parts.append(f"{event.tool}[{event.call_id}]")
        if isinstance(event, ToolResultEvent):
            error = event.result.error
            parts.append(f"{event.result.status} {error.code if error else ''}".rstrip())
            if error is not None and error.message:
                parts.append("- " + error.message.replace("\n", " ")[:200])
    elif isinstance(event, ModelRequestEvent | ModelResponseEvent):
        parts.append(f"step {event.step}")
        if isinstance(event, ModelResponseEvent):
            usage = event.response.usage
            parts.append(f"{usage.input_tokens} in / {usage.output_tokens} out, {event.latency_ms} ms")
    elif isinstance(event, AgentEndEvent | RunEndEvent):
        parts.append(event.status)
    elif message := getattr(event, "message", None) or getattr(event, "reason", None):
        parts.append(str(message).replace("\n", " ")[:200])
    return " ".join(parts)
