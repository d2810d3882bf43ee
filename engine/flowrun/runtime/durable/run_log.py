"""The engine's own log for one run, in `run_dir/flowrun.log`. events.jsonl stays the record of
what the agents did; this file says what the engine did: INFO for the run's milestones, WARNING
and ERROR where they belong, and at DEBUG (`-v`, or FLOWRUN_LOG=debug) one line per event. A
failed tool call is a WARNING; a model failure that ends the run is logged once (where the call
failed).

It is a stdlib `logging.Logger` of its own (not registered, not propagating), so a program that
runs workflows through the API keeps its logging configuration untouched. Every line passes
through the run's redaction before it is written."""

from __future__ import annotations

import logging
import os
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
LOG_FORMAT = "%(asctime)s.%(msecs)03d | %(levelname)-7s | %(message)s"
WARNINGS: tuple[type[Event], ...] = (ModelRetryEvent, BudgetExceededEvent, UntilErrorEvent)
MILESTONES: tuple[type[Event], ...] = (RunStartEvent, RunEndEvent, AgentEndEvent, SeedKeptEvent)


def log_level(verbosity: int) -> int:
    """INFO by default; DEBUG with -v or FLOWRUN_LOG=debug."""
    wanted = os.environ.get("FLOWRUN_LOG", "").lower()
    if verbosity > 0 or wanted == "debug":
        return logging.DEBUG
    return logging.WARNING if wanted in ("warning", "error") else logging.INFO


class _RedactingHandler(logging.FileHandler):
    """Each line redacted, then written and flushed (StreamHandler.emit flushes every record,
    so a crash loses nothing); a line that cannot be written is dropped (handleError)."""

    def __init__(self, path: Path, redact: Callable[[str], str]) -> None:
        super().__init__(path, encoding="utf-8")
        self.redact = redact

    def format(self, record: logging.LogRecord) -> str:
        return self.redact(super().format(record))

    def handleError(self, record: logging.LogRecord) -> None:
        """A line that cannot be written is dropped quietly: no "Logging error" traceback."""


class RunLog:
    """The run's log file; `on_event` is the subscriber that writes one line per event."""

    def __init__(self, run_dir: Path, verbosity: int, redact: Callable[[str], str]) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        self.logger = logging.Logger(f"flowrun.run.{run_dir.name}", log_level(verbosity))
        self.handler = _RedactingHandler(run_dir / LOG_NAME, redact)
        self.handler.setFormatter(logging.Formatter(LOG_FORMAT, datefmt="%Y-%m-%d %H:%M:%S"))
        self.logger.addHandler(self.handler)
        self.model_errors: set[str] = set()  # failures already logged where the model call failed

    def on_event(self, event: Event) -> None:
        level = self.level(event)
        if self.logger.isEnabledFor(level):  # formatting costs nothing unless the line is kept
            self.logger.log(level, "%s", describe_event(event))

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
        self.logger.removeHandler(self.handler)
        self.handler.close()


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
