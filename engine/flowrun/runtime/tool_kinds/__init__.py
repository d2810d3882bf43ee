"""Tool kinds, in the order they are asked to claim a tool name. A new kind (e.g. MCP) is one
module with a `KIND` implementing `bound_tool.ToolKind` plus one line here."""

from __future__ import annotations

from flowrun.manifest.project import Project
from flowrun.manifest.sandboxing import split_entry, tool_layers
from flowrun.runtime.loop.contracts import AgentInstance, BindRequest, BoundTool, RunServices, ToolKind
from flowrun.runtime.tool_kinds import agent, command, mcp, python

TOOL_KINDS: dict[str, ToolKind] = {
    "python": python.KIND,
    "command": command.KIND,
    "agent": agent.KIND,
    "mcp": mcp.KIND,
}


def kind_for(name: str, project: Project) -> ToolKind | None:
    return next((kind for kind in TOOL_KINDS.values() if kind.claims(name, project)), None)


def bind_tools(requests: list[BindRequest]) -> dict[str, BoundTool]:
    """Each entry bound by the kind that claims it (a name nothing claims is skipped:
    validation has reported it). The entry keys every tool takes (`approve`, `sandbox`) are
    taken out of the config the kind sees."""
    bound: dict[str, BoundTool] = {}
    for request in requests:
        kind = kind_for(request.name, request.project)
        if kind is None:
            continue
        entry = split_entry(request.name, request.config)
        own = BindRequest(request.name, entry.config, request.agent, request.project)
        for tool in kind.bind(own):
            tool.approve = entry.approve
            tool.sandbox_layers = tool_layers(request.project, entry)
            bound[tool.name] = tool
    return bound


async def prepare_tools(inst: AgentInstance, run: RunServices) -> bool:
    """Before an agent's model call: kinds with an `async prepare(inst, run) -> bool` (MCP:
    start the servers, list their tools) finish binding its tools. True when they changed."""
    changed = False
    for kind in TOOL_KINDS.values():
        prepare = getattr(kind, "prepare", None)
        if prepare is not None and await prepare(inst, run):
            changed = True
    return changed


async def close_tools(run: RunServices) -> None:
    """At the end of a run: kinds with an `async aclose(run)` release what they hold."""
    for kind in TOOL_KINDS.values():
        close = getattr(kind, "aclose", None)
        if close is not None:
            await close(run)
