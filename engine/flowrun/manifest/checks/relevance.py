"""Which problems matter to the workflows of a folder. A run is stopped by the errors of what it
can use: the workflow, the agents it can start (entry, steps and the agents they call as tools,
with the manifests they extend), the tools those agents list and their prompts, plus everything
that cannot be told apart (models, MCP servers). A problem of an agent or tool that no workflow
reaches (a copy of an example next to agents it does not need, a file that does not load) does
not stop a run, and `validate` of a folder with workflows reports it as a warning that says so;
in a folder without a workflow (a library of agents linted in CI) it stays an error."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.graph import reachable_agents, tool_entries, workflow_agents
from flowrun.manifest.project import Project, find_agent_prompt
from flowrun.paths import display_path


def unused_files(project: Project, starts: list[str]) -> dict[str, str]:
    """The files (as diagnostics name them) of the agents and tools a run from `starts` never
    uses, each with what it is ("agent 'x'", "tool 'y'", "the prompt of agent 'x'")."""
    agents = reachable_agents([name for name in starts if name in project.agents], project)
    tools = {name for agent in agents for _, name, _ in tool_entries(project.agents[agent].spec)}
    named = set(starts) | tools  # names a run may look up, loaded or not
    used = {layer.source.display for agent in agents for layer in project.agent_layers.get(agent, [])}
    used |= {project.tools[name].source.display for name in tools if name in project.tools}
    used |= {display_path(p) for agent in agents if (p := _prompt(project, agent)) is not None}
    unused: dict[str, str] = {}
    for name, layers in project.agent_layers.items():
        if name not in agents:
            unused |= {layer.source.display: f"agent '{name}'" for layer in layers}
            if (prompt := _prompt(project, name)) is not None:
                unused.setdefault(display_path(prompt), f"the prompt of agent '{name}'")
    unused |= {t.source.display: f"tool '{name}'" for name, t in project.tools.items() if name not in tools}
    unused |= {
        file: f"{kind} '{name}'" for file, (kind, name) in project.unloaded.items() if name not in named
    }
    return {file: what for file, what in unused.items() if file not in used}


def _prompt(project: Project, agent: str) -> Path | None:
    loaded = project.agents.get(agent)
    return None if loaded is None or loaded.builtin else find_agent_prompt(loaded, project)


def blocking(project: Project, starts: list[str], diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """The errors among `diagnostics` that stop a run starting from the agents `starts`. A
    model setting that names an unset variable stops it only when the run uses that model (it
    is checked when the run resolves its models)."""
    errors = [d for d in diagnostics if d.severity == "error" and d.code != "unset-variable"]
    if not errors:
        return []
    unused = unused_files(project, starts)
    return [d for d in errors if d.file not in unused]


def reach_known(project: Project) -> bool:
    """Whether every agent the workflows here can start is known. Not when a workflow's `entry`
    or steps, or the tools of an agent they reach, are unreadable (schema/salvage.py), or when
    they name an agent whose file did not load: what is unreachable cannot be told then."""
    starts: list[str] = []
    for wf in project.workflows:
        if wf.source.cut_within(("entry",)) or wf.source.cut_within(("steps",)):
            return False
        if not wf.spec.entry and not wf.spec.steps:  # its error says so
            return False
        starts += [name for name, _ in workflow_agents(wf.spec)]
    agents = reachable_agents([name for name in starts if name in project.agents], project)
    if any(name in project.broken for name in starts):
        return False
    for name in agents:
        loaded = project.agents[name]
        if loaded.source.cut_within(("tools",)):
            return False
        if any(entry in project.broken for _, entry, _ in tool_entries(loaded.spec)):
            return False
    return True


def unused_as_warnings(project: Project, found: list[Diagnostic]) -> list[Diagnostic]:
    """`validate` of a folder with workflows: the errors of an agent or tool none of them
    reaches become warnings that say so (a run does not stop on them). A folder without a
    workflow keeps them as errors, and so does one whose reach cannot be told."""
    if not project.workflows or not reach_known(project):
        return found
    starts = [name for wf in project.workflows for name, _ in workflow_agents(wf.spec)]
    unused = unused_files(project, starts)
    return [_unused(d, unused[d.file]) if d.severity == "error" and d.file in unused else d for d in found]


def _unused(d: Diagnostic, what: str) -> Diagnostic:
    message = f"{d.message} ({what} is used by no workflow here: a run does not stop on it)"
    return dataclasses.replace(d, severity="warning", message=message)
