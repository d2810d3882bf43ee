"""`flowrun validate --connect`: start every MCP server the projects declare (as a run would,
in the sandbox for stdio servers) and check that the tools their allowlists and the agents'
`SERVER.TOOL` entries name exist. Each problem is a Diagnostic at the declaration or entry."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.ecosystem.mcp_refs import mcp_ref
from flowrun.manifest.graph import tool_entries
from flowrun.manifest.project import Loaded, Project
from flowrun.manifest.schema.check import did_you_mean
from flowrun.manifest.specs import McpServerSpec
from flowrun.runtime.mcp.launch import Placement, server_launch
from flowrun.tools.remote.mcp_client import McpConnection, McpServerDown
from flowrun.tools.sandbox import Mode


def declaration_path(name: str, loaded: Loaded[McpServerSpec]) -> tuple[str, str]:
    """The YAML path of a server's declaration: in .mcp.json or under a workflow."""
    return ("mcpServers" if loaded.source.path.suffix == ".json" else "mcp_servers", name)


async def check_servers(project: Project, override: Mode | None = None) -> list[Diagnostic]:
    """`override`: --sandbox MODE, over every `sandbox:` mode (as a run with it would)."""
    if not project.mcp_servers:
        return []
    workflow = project.workflows[0].spec if project.workflows else None
    with tempfile.TemporaryDirectory(prefix="flowrun-connect-") as folder:
        place = Placement(workflow, override, Path(folder), project.roots)
        names = sorted(project.mcp_servers)
        found = await asyncio.gather(*(_tools(name, project.mcp_servers[name], place) for name in names))
    out: list[Diagnostic] = []
    listed: dict[str, set[str]] = {}
    for name, (tools, problem) in zip(names, found, strict=True):
        if problem is not None:
            out.append(problem)
            continue
        listed[name] = tools
        out += _allowlist(name, project.mcp_servers[name], tools)
    return out + _entries(project, listed)


async def _tools(
    name: str, loaded: Loaded[McpServerSpec], place: Placement
) -> tuple[set[str], Diagnostic | None]:
    connection: McpConnection | None = None
    try:
        connection = McpConnection(server_launch(name, loaded, place))
        tools = await connection.start()
    except McpServerDown as e:
        message = f"MCP server '{name}' did not start: {e}"
        return set(), loaded.source.diag(declaration_path(name, loaded), message, "", "mcp-connect")
    finally:
        if connection is not None:
            await connection.close()
    return {t.name for t in tools}, None


def _allowlist(name: str, loaded: Loaded[McpServerSpec], tools: set[str]) -> list[Diagnostic]:
    out = []
    for i, tool in enumerate(loaded.spec.tools or []):
        if tool not in tools:
            hint = did_you_mean(tool, tools) or "it has: " + (", ".join(sorted(tools)) or "(no tools)")
            where = (*declaration_path(name, loaded), "tools", i)
            out.append(
                loaded.source.diag(where, f"MCP server '{name}' has no tool '{tool}'", hint, "mcp-connect")
            )
    return out


def _entries(project: Project, listed: dict[str, set[str]]) -> list[Diagnostic]:
    out = []
    for agent in project.agents.values():
        if agent.builtin:
            continue
        for i, entry, _ in tool_entries(agent.spec):
            ref = mcp_ref(entry, project)
            if ref is None or ref.tool is None or ref.server not in listed:
                continue
            tools = listed[ref.server]
            if ref.tool not in tools:
                hint = did_you_mean(ref.tool, tools) or "it has: " + (
                    ", ".join(sorted(tools)) or "(no tools)"
                )
                message = f"MCP server '{ref.server}' has no tool '{ref.tool}'"
                out.append(agent.source.diag(("tools", i), message, hint, "mcp-connect"))
    return out
