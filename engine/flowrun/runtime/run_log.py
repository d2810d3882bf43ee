"""The engine's own log for one run, in `run_dir/flowrun.log` (loguru). events.jsonl stays the
record of what the agents did; this file is for what the engine did (and, when verbose, a one-line
trace per event). Every formatted line, tracebacks included, passes through `redact` first."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from loguru import logger

LOG_NAME = "flowrun.log"
LOG_FORMAT = "{time:YYYY-MM-DD HH:mm:ss.SSS} | {level: <7} | {name}:{line} | {message}"


class _RedactingFile:
    """A loguru sink: redacts each formatted message, appends it, flushes (a crash loses nothing).
    loguru calls `stop()` when the sink is removed."""

    def __init__(self, path: Path, redact: Callable[[str], str]) -> None:
        self.redact = redact
        self._file: TextIO = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, message: str) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.write(self.redact(str(message)))
                self._file.flush()

    def stop(self) -> None:
        with self._lock:
            self._file.close()


def setup_run_logging(
    run_dir: Path, verbosity: int, redact: Callable[[str], str] | None = None
) -> Callable[[], None]:
    """Add a sink writing to `run_dir/flowrun.log` (DEBUG when verbosity > 0, else INFO) and
    return the function that removes it. Pass `run.redactor.text` as `redact`."""
    run_dir.mkdir(parents=True, exist_ok=True)
    sink = _RedactingFile(run_dir / LOG_NAME, redact or (lambda text: text))
    handler_id = logger.add(
        sink,
        level="DEBUG" if verbosity > 0 else "INFO",
        format=LOG_FORMAT,
        backtrace=False,
        diagnose=False,  # diagnose would print local variables, which may hold keys
        catch=True,
    )
    removed = False

    def remove() -> None:
        nonlocal removed
        if not removed:
            removed = True
            logger.remove(handler_id)

    return remove


def describe_event(event: dict[str, Any]) -> str:
    """A one-line summary of an event (the full event is in events.jsonl)."""
    kind = event.get("type", "?")
    who = event.get("agent_id") or event.get("agent") or ""
    parts = [f"#{event.get('seq', '?')}", str(kind)]
    if who:
        parts.append(str(who))
    if kind in ("tool_call", "tool_result"):
        parts.append(f"{event.get('tool')}[{event.get('call_id')}]")
        if kind == "tool_result":
            result = event.get("result") or {}
            error = (result.get("error") or {}).get("code")
            parts.append(str(result.get("status")) + (f" {error}" if error else ""))
    elif kind in ("model_request", "model_response"):
        parts.append(f"step {event.get('step')}")
        if kind == "model_response":
            usage = (event.get("response") or {}).get("usage") or {}
            parts.append(
                f"{usage.get('input_tokens', 0)} in / {usage.get('output_tokens', 0)} out, "
                f"{event.get('latency_ms')} ms"
            )
    elif kind in ("agent_end", "run_end"):
        parts.append(str(event.get("status")))
    elif event.get("message"):
        parts.append(str(event["message"]).replace("\n", " ")[:200])
    return " ".join(parts)


def log_event(event: dict[str, Any]) -> None:
    """A subscriber: one DEBUG line per event. Lazy, so it costs next to nothing unless a sink
    takes DEBUG."""
    logger.opt(lazy=True).debug("{}", lambda: describe_event(event))
