"""How an agent's tool entry names an MCP server: `SERVER` (all its allowed tools) or
`SERVER.TOOL` (one), and the checks of such an entry."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.project import Project
from flowrun.manifest.yaml_source import PathKey, Source


@dataclass(frozen=True, slots=True)
class McpRef:
    """An agent's tool entry that names an MCP server (tool None: all its allowed tools)."""

    server: str
    tool: str | None


def mcp_ref(name: str, project: Project) -> McpRef | None:
    """`SERVER` or `SERVER.TOOL` when SERVER is a declared MCP server (tools and agents of the
    same name come first)."""
    server, _, tool = name.partition(".")
    if server not in project.mcp_servers:
        return None
    if not tool and (name in project.tools or name in project.agents):
        return None
    return McpRef(server, tool or None)


def check_entry(
    src: Source, index: int, name: str, ref: McpRef, config: Mapping[str, object], project: Project
) -> list[Diagnostic]:
    """An agent's `SERVER` / `SERVER.TOOL` entry: the tool is not hidden by the server's
    allowlist, and the entry sets only `approve`."""
    from flowrun.manifest.schema.check import did_you_mean

    out: list[Diagnostic] = []
    where: PathKey = ("tools", index) if not config else ("tools", index, name)
    allowlist = project.mcp_servers[ref.server].spec.tools
    if ref.tool is not None and allowlist is not None and ref.tool not in allowlist:
        hint = (
            did_you_mean(ref.tool, allowlist) or f"add it to the server's `tools:` ({', '.join(allowlist)})"
        )
        out.append(
            src.diag(
                where, f"MCP server '{ref.server}' does not allow tool '{ref.tool}'", hint, "unknown-tool"
            )
        )
    for key in config:
        if key == "approve":
            if config[key] not in ("ask", "always", "never"):
                message = f"approve must be ask, always or never, not {config[key]!r}"
                out.append(src.diag((*where, key), message, "", "bad-config"))
            continue
        hint = (
            "an MCP server's process is confined by the server's own `sandbox:`"
            if key == "sandbox"
            else "an MCP tool entry takes only `approve`"
        )
        out.append(
            src.diag((*where, key), f"'{name}' has no config key '{key}'", hint, "bad-config", key=True)
        )
    return out
