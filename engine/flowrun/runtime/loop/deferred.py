"""Deferred tools: bound for an agent but offered to its model only once `tool_search` found
them (tools/tool_search.py; MCP servers with many tools defer theirs, runtime/tool_kinds/mcp.py).
A result whose data names tools to load (`tools_loaded`) marks them; they are offered from the
next model request on and stay for the instance's life. A recorded result carries the same
names, so a resumed or replayed run offers exactly the tools the first one did."""

from __future__ import annotations

from flowrun.runtime.loop.contracts import AgentInstance
from flowrun.tools.tool_search import LOADED_KEY, NAME
from flowrun.types import ToolCall, ToolResult


def note_loaded(inst: AgentInstance, result: ToolResult) -> None:
    """Mark the deferred tools a result loads (searched, or called before they were loaded)."""
    names = result.data.get(LOADED_KEY)
    if not isinstance(names, list):
        return
    for name in names:
        if name in inst.deferred and name not in inst.tools and name not in inst.loading:
            inst.loading.append(name)


def load_noted(inst: AgentInstance) -> bool:
    """Before a model call: offer the marked tools; True when the agent's tools changed (its
    prompt is recorded again, with them)."""
    if not inst.loading:
        return False
    for name in inst.loading:
        inst.tools.setdefault(name, inst.deferred[name])
    inst.loading.clear()
    inst.prompt_digests = None  # the request's tools changed: a replay compares the new digests
    return True


def not_loaded(inst: AgentInstance, call: ToolCall) -> ToolResult | None:
    """A call of a deferred tool the model was not offered yet: not run, but loaded, so the
    model sees its parameters at its next step and can call it properly."""
    if call.name not in inst.deferred or call.name in inst.tools:
        return None
    return ToolResult.fail(
        "NOT_LOADED",
        f"{call.name} was not loaded, so it did not run. It is loaded now: its parameters are "
        f"offered from your next step; call it again then (use {NAME} to find other tools).",
        **{LOADED_KEY: [call.name]},
    )
