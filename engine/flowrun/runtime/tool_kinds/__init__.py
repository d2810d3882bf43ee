"""Tool kinds, in the order they are asked to claim a tool name. A new kind (e.g. MCP) is one
module with a `KIND` implementing `bound_tool.ToolKind` plus one line here."""

from __future__ import annotations

from flowrun.manifest.project import Project
from flowrun.runtime.bound_tool import BindRequest, BoundTool, ToolKind
from flowrun.runtime.tool_kinds import agent, command, python

TOOL_KINDS: dict[str, ToolKind] = {
    "python": python.KIND,
    "command": command.KIND,
    "agent": agent.KIND,
}


def kind_for(name: str, project: Project) -> ToolKind | None:
    return next((kind for kind in TOOL_KINDS.values() if kind.claims(name, project)), None)


def bind_tools(requests: list[BindRequest]) -> dict[str, BoundTool]:
    """Each entry bound by the kind that claims it (a name nothing claims is skipped:
    validation has reported it)."""
    bound: dict[str, BoundTool] = {}
    for request in requests:
        kind = kind_for(request.name, request.project)
        if kind is not None:
            bound.update((tool.name, tool) for tool in kind.bind(request))
    return bound
