"""How an agent's tool entry names a remote A2A agent (`NAME`, declared in the workflow's
`a2a_agents:`), and the checks of such an entry and of the names. The declarations' own rules
are in a2a_config.py."""

from __future__ import annotations

from collections.abc import Mapping

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.project import Project
from flowrun.manifest.yaml_source import PathKey, Source


def a2a_ref(name: str, project: Project) -> bool:
    """Whether an agent's entry `name` means a declared A2A agent (tools, agents and MCP servers
    of the same name come first: validate reports the clash at the declaration)."""
    return name in project.a2a_agents and not shadowing(name, project)


def shadowing(name: str, project: Project) -> str | None:
    """What else the name of a declared A2A agent names, or None."""
    if name in project.tools:
        return f"tool '{name}'"
    if name in project.agents:
        return f"agent '{name}'"
    if name in project.mcp_servers:
        return f"MCP server '{name}'"
    return None


def name_problems(project: Project) -> list[Diagnostic]:
    """An A2A agent named like a tool, an agent or an MCP server: an entry of that name means the
    other one."""
    out = []
    for name, loaded in project.a2a_agents.items():
        other = shadowing(name, project)
        if other is not None:
            message = f"A2A agent '{name}' has the name of the {other}, which an agent's `{name}` entry means"
            hint = f"rename the A2A agent (e.g. {name}-a2a)"
            out.append(
                loaded.source.diag(
                    project.a2a_paths[name], message, hint, "ambiguous-name", severity="warning"
                )
            )
    return out


def check_entry(src: Source, index: int, name: str, config: Mapping[str, object]) -> list[Diagnostic]:
    """An agent's entry for an A2A agent sets only `approve` (and `a2a`, a declaration, checked
    when the project loads)."""
    out: list[Diagnostic] = []
    where: PathKey = ("tools", index, name)
    for key, value in config.items():
        if key == "a2a":
            continue
        if key == "approve":
            if value not in ("ask", "always", "never"):
                message = f"approve must be ask, always or never, not {value!r}"
                out.append(src.diag((*where, key), message, "", "bad-config"))
            continue
        hint = "an A2A agent's entry takes only `approve` and `a2a`; its url, headers and timeout_s "
        hint += "go under `a2a:`"
        out.append(
            src.diag((*where, key), f"'{name}' has no config key '{key}'", hint, "bad-config", key=True)
        )
    return out
