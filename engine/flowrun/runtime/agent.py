"""The one generic agent loop: call the model, run its tool calls concurrently, feed the results
back, repeat until the model answers without tool calls, a finish tool is called, a stop pattern
matches, or `max_steps` is reached."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from flowrun.providers.base import ModelConfig, Provider
from flowrun.runtime.compact import compact, needs_compaction
from flowrun.runtime.toolbox import BoundTool
from flowrun.types import Message, ModelResponse, ToolCall, ToolResult

if TYPE_CHECKING:
    from flowrun.runtime.run import Run

OutcomeStatus = Literal["completed", "finished", "stopped", "max_steps"]
DEFAULT_MAX_STEPS = 30


@dataclass
class Outcome:
    status: OutcomeStatus
    text: str
    steps: int


@dataclass
class AgentInstance:
    """A running agent: its identity, settings and conversation. A persistent sub-agent keeps
    one instance (and so its messages) across calls."""

    id: str  # deterministic path, e.g. "orchestrator/searcher@call_1_0"
    name: str
    spec: Any  # the effective AgentManifest
    model: ModelConfig
    provider: Provider
    tools: dict[str, BoundTool]
    system: str
    depth: int
    cwd: Path
    messages: list[Message] = field(default_factory=list)
    model_calls: int = 0  # over the instance's life: the index of its next model call
    written: set[str] = field(default_factory=set)  # workspace files its write tools touched
    calls_made: dict[str, int] = field(default_factory=dict)  # sub-agent name -> calls
    side_calls: dict[str, int] = field(default_factory=dict)  # purpose -> tool-less calls (compaction)
    task: str = ""

    @property
    def max_steps(self) -> int:
        return self.spec.max_steps or DEFAULT_MAX_STEPS

    def stop_pattern(self) -> re.Pattern[str] | None:
        stop = self.spec.stop
        return re.compile(stop.pattern) if stop and stop.pattern else None

    def stops_on_text(self) -> bool:
        stop = self.spec.stop
        return stop is None or stop.on_text is None or stop.on_text


async def run_agent(run: Run, inst: AgentInstance, task: str, max_steps: int | None = None) -> Outcome:
    """Give `inst` a task and loop until it is done."""
    inst.task = task
    inst.messages.append(Message("user", run.opening_message(inst, task)))
    limit = max_steps or inst.max_steps
    pattern = inst.stop_pattern()
    last_text = ""
    for step in range(1, limit + 1):
        if needs_compaction(inst):
            await compact(run, inst)
        response = await run.model_call(inst)
        _unique_call_ids(response, step)
        last_text = response.text or last_text
        inst.messages.append(
            Message("assistant", response.text, list(response.tool_calls), thinking=list(response.thinking))
        )
        if pattern is not None and response.text and pattern.search(response.text):
            return Outcome("stopped", response.text, step)
        if not response.tool_calls:
            if inst.stops_on_text():
                return Outcome("completed", response.text, step)
            inst.messages.append(Message("user", "Continue. Call a finish tool when the task is done."))
            continue
        outcome = await _tool_phase(run, inst, response, step)
        if outcome is not None:
            return outcome
    return Outcome("max_steps", last_text, limit)


async def _tool_phase(run: Run, inst: AgentInstance, response: ModelResponse, step: int) -> Outcome | None:
    results = await run.execute_calls(inst, response.tool_calls)
    control: dict[str, Any] | None = None
    for call, result in zip(response.tool_calls, results, strict=True):
        inst.messages.append(_tool_message(call, result))
        wanted = result.data.get("control") if result.status != "error" else None
        if isinstance(wanted, dict) and (control is None or wanted.get("action") == "finish"):
            control = wanted
    if control is None:
        return None
    if control.get("action") == "finish":
        return Outcome("finished", str(control.get("result", "")), step)
    if control.get("action") == "reset_context":
        run.reset_context(inst)
    return None


def _unique_call_ids(response: ModelResponse, step: int) -> None:
    """Tool results are matched to calls by id; a model that repeats or omits ids gets fresh ones."""
    seen: set[str] = set()
    for i, call in enumerate(response.tool_calls):
        if not call.id or call.id in seen:
            call.id = f"call_{step}_{i}"
        seen.add(call.id)


def _tool_message(call: ToolCall, result: ToolResult) -> Message:
    return Message(
        "tool",
        result.model_text(),
        tool_call_id=call.id,
        name=call.name,
        is_error=result.status == "error",
    )
