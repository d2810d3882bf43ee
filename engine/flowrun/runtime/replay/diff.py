"""What `flowrun replay --diff` says about the first step that diverged: the lines of the system
prompt that changed (first the memory, when its index in the prompt did, and the project
instructions it gained or lost, by file name), the tools added, removed or changed, or the task,
read from the recorded log and the replay's log (their `agent_prompt` and `agent_start` events).
Logs written before prompts were kept have only digests; then it says so."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from flowrun.events import AgentPromptEvent, AgentStartEvent, E, Event, MemoryIndexEvent, ModelResponseEvent
from flowrun.manifest.ecosystem.project_instructions import blocks_in
from flowrun.runtime.durable.event_log import read_events
from flowrun.runtime.durable.ledger import Divergence

MAX_DIFF_LINES = 40


def _first(events: list[Event], kind: type[E], agent_id: str) -> E | None:
    return next((e for e in events if isinstance(e, kind) and getattr(e, "agent_id", None) == agent_id), None)


def _text_diff(before: str, after: str, name: str) -> list[str]:
    lines = list(
        difflib.unified_diff(
            before.splitlines(), after.splitlines(), f"{name} (recorded)", f"{name} (now)", lineterm="", n=1
        )
    )
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"... ({len(lines) - MAX_DIFF_LINES} more lines)"]
    return lines


def _instruction_changes(before: str, after: str) -> list[str]:
    """The project instructions (AGENTS.md, CLAUDE.md) a prompt gained, lost or read otherwise:
    a replay reads the recorded text, so these change only when the agent's `instructions:` (or
    the workflow's) did, or when the recording had none to give."""
    then, now = blocks_in(before), blocks_in(after)
    out = [
        f"project instructions added: {files} (the agent reads them now: its `instructions:` or the "
        "workflow's changed)"
        for files in sorted(now.keys() - then.keys())
    ]
    out += [
        f"project instructions removed: {files} (the agent no longer reads them: its `instructions:` "
        "or the workflow's changed)"
        for files in sorted(then.keys() - now.keys())
    ]
    out += [
        f"project instructions differ: {files}"
        for files in sorted(then.keys() & now.keys())
        if then[files] != now[files]
    ]
    return out


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _tool_changes(before: Sequence[Mapping[str, object]], after: Sequence[Mapping[str, object]]) -> list[str]:
    old = {str(t.get("name")): t for t in before}
    new = {str(t.get("name")): t for t in after}
    out = [f"tool added: {name}" for name in sorted(set(new) - set(old))]
    out += [f"tool removed: {name}" for name in sorted(set(old) - set(new))]
    for name in sorted(set(old) & set(new)):
        parts = [
            part
            for part, key in (("description", "description"), ("argument schema", "parameters"))
            if json.dumps(old[name].get(key), sort_keys=True)
            != json.dumps(new[name].get(key), sort_keys=True)
        ]
        if parts:
            out.append(f"tool changed: {name} ({' and '.join(parts)})")
    return out or ["the tools are the same; the output schema changed"]


def _unused_calls(recorded: list[Event], now: list[Event]) -> list[str]:
    """The recorded model calls the replay did not make, per agent instance."""
    made = {(e.agent_id, e.step) for e in now if isinstance(e, ModelResponseEvent)}
    left: dict[tuple[str, str], list[int]] = {}
    for e in recorded:
        if isinstance(e, ModelResponseEvent) and (e.agent_id, e.step) not in made:
            left.setdefault((e.agent, e.agent_id), []).append(e.step)
    lines = [
        f"not made: agent '{agent}' ({agent_id}) model call(s) {', '.join(map(str, steps))}"
        for (agent, agent_id), steps in left.items()
    ]
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"... ({len(lines) - MAX_DIFF_LINES} more agents)"]
    return [*lines, "a step was removed, or an agent now stops sooner (max_steps, stop, a condition)"]


def _memory_change(recorded: list[Event], now: list[Event], agent_id: str) -> list[str]:
    """The memory as the cause of a changed prompt: the index the instance got then and now."""
    then, again = _first(recorded, MemoryIndexEvent, agent_id), _first(now, MemoryIndexEvent, agent_id)
    if then is None and again is None:
        return []
    if then is not None and again is not None and (then.text, then.cut) == (again.text, again.cut):
        return []
    name = (again or then).memory  # type: ignore[union-attr]
    before = _short(then.sha256) if then is not None else "no index"
    after = _short(again.sha256) if again is not None else "no index"
    return [f"cause: memory '{name}' changed since the recording (MEMORY.md {before} -> {after})"]


def _short(digest: str | None) -> str:
    return f"sha256 {digest[:12]}" if digest else "missing"


def divergence_details(recorded_log: Path, replay_log: Path, point: Divergence) -> list[str]:
    """Human lines on why the call `point` names differs from the recording."""
    recorded, now = read_events(recorded_log), read_events(replay_log)
    if point.reason == "unused":
        return _unused_calls(recorded, now)
    if point.reason == "condition":
        return ["the condition was edited, or a file or input it reads differs from the recording"]
    if point.reason == "model":
        return ["the recorded answers came from the other model"]
    then_prompt = _first(recorded, AgentPromptEvent, point.agent_id)
    now_prompt = _first(now, AgentPromptEvent, point.agent_id)
    if point.reason == "missing":
        if _first(recorded, AgentStartEvent, point.agent_id) is None:
            return [f"the recording has no agent {point.agent_id}: the run took another path before it"]
        return [f"the recording has no model call {point.step} of {point.agent_id}: an earlier step changed"]
    if point.reason in ("system", "tools"):
        if then_prompt is None or now_prompt is None:
            return [
                "the recording keeps only digests of prompts and tools (it was made before prompts were kept)"
            ]
        if point.reason == "system":
            named = _memory_change(recorded, now, point.agent_id)
            named += _instruction_changes(then_prompt.system, now_prompt.system)
            return named + _text_diff(then_prompt.system, now_prompt.system, "system prompt")
        return _tool_changes(then_prompt.tools, now_prompt.tools)
    then_start = _first(recorded, AgentStartEvent, point.agent_id)
    now_start = _first(now, AgentStartEvent, point.agent_id)
    if then_start is not None and now_start is not None and then_start.task != now_start.task:
        return _text_diff(then_start.task, now_start.task, "task")
    return ["an earlier tool result or model answer in its conversation differs"]
