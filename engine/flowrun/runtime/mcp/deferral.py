"""Deferred MCP tools: a server declared `defer: true`, or with more tools than its
`defer_above` (40 by default), is not offered tool by tool. The agent gets one `tool_search`
tool instead (tools/tool_search.py); what it finds is offered from its next model request on
(runtime/loop/deferred.py). An entry that names one tool (`SERVER.TOOL`) is never deferred."""

from __future__ import annotations

from dataclasses import dataclass

from flowrun.manifest.ecosystem.mcp_refs import McpRef
from flowrun.manifest.specs import McpServerSpec
from flowrun.runtime.loop.contracts import AgentInstance, BoundTool, ToolKind
from flowrun.tools import tool_search
from flowrun.types import ToolResult, ToolSpec


@dataclass(frozen=True, slots=True)
class Search:
    """The target of an agent's `tool_search` tool: its deferred tools are on the instance."""


def defers(spec: McpServerSpec, ref: McpRef, count: int) -> bool:
    """Whether an entry's tools are deferred: `defer:` says so, else more than `defer_above`."""
    if ref.tool is not None:
        return False
    return spec.defer if spec.defer is not None else count > spec.defer_above


def search_tool(kind: ToolKind, inst: AgentInstance, servers: list[str]) -> BoundTool:
    """The agent's `tool_search`, described with how many tools wait behind it."""
    waiting = sum(1 for name in inst.deferred if name not in inst.tools)
    spec = ToolSpec(tool_search.NAME, tool_search.description(waiting, servers), dict(tool_search.PARAMETERS))
    bound = BoundTool(tool_search.NAME, spec, kind, target=Search())
    bound.replay = "recorded"  # a replay loads exactly the tools the recorded search loaded
    bound.foreign_text = True  # it answers with the servers' descriptions
    return bound


def run_search(inst: AgentInstance, arguments: dict[str, object]) -> ToolResult:
    specs = {name: bound.spec for name, bound in inst.deferred.items()}
    return tool_search.search(specs, set(inst.tools), arguments)
