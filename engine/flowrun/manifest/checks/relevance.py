"""Which problems stop a run. `validate` reports every manifest of a project; a run is stopped
by the errors of what it can use: the workflow, the agents it can start (entry, steps and the
agents they call as tools, with the manifests they extend) and the tools those agents list,
plus everything that cannot be told apart (models, MCP servers, a file that did not load). A
cross-reference error of an agent or tool that loaded but that the run never uses (a copy of
an example next to agents it does not need) does not stop it."""

from __future__ import annotations

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.graph import reachable_agents, tool_entries
from flowrun.manifest.project import Project


def unused_files(project: Project, starts: list[str]) -> set[str]:
    """The files (as diagnostics name them) of the agents and tools a run from `starts` never uses."""
    agents = reachable_agents([name for name in starts if name in project.agents], project)
    tools = {name for agent in agents for _, name, _ in tool_entries(project.agents[agent].spec)}
    used = {layer.source.display for agent in agents for layer in project.agent_layers.get(agent, [])}
    used |= {project.tools[name].source.display for name in tools if name in project.tools}
    unused = {
        layer.source.display
        for name, layers in project.agent_layers.items()
        if name not in agents
        for layer in layers
    }
    unused |= {tool.source.display for name, tool in project.tools.items() if name not in tools}
    return unused - used


def blocking(project: Project, starts: list[str], diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """The errors among `diagnostics` that stop a run starting from the agents `starts`. A
    model setting that names an unset variable stops it only when the run uses that model (it
    is checked when the run resolves its models)."""
    errors = [d for d in diagnostics if d.severity == "error" and d.code != "unset-variable"]
    if not errors:
        return []
    unused = unused_files(project, starts)
    return [d for d in errors if d.file not in unused]
