"""`flowrun validate FILE`: the problems of the named file and of what it uses, not of its
neighbours. A workflow uses the agents it can start (and those they call), their tools, prompts
and skills; an agent uses the same from itself on; a tool only itself. A loaded agent, tool,
prompt or skill that none of the named files uses is a neighbour: its problems are left out
(`validate` of the folder reports them). A file that did not load, a model or an MCP server
cannot be told apart, so its problems stay."""

from __future__ import annotations

import os
from pathlib import Path

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.graph import reachable_agents, tool_entries, workflow_agents
from flowrun.manifest.project import Project, find_agent_prompt
from flowrun.paths import is_dir, is_file


def focused(project: Project, named: set[str], found: list[Diagnostic]) -> list[Diagnostic]:
    """`found` without the problems of neighbours of the `named` files (absolute paths)."""
    used = used_files(project, named)
    neighbours = partition(project) - used
    return [d for d in found if os.path.abspath(d.file) not in neighbours]


def used_files(project: Project, named: set[str]) -> set[str]:
    """The named files and every agent, tool, prompt and skill file they use (absolute)."""
    starts: list[str] = []
    tools: set[str] = set()
    for wf in project.workflows:
        if _abs(wf.source.path) in named:
            starts += [name for name, _ in workflow_agents(wf.spec)]
    for name, layers in project.agent_layers.items():
        if any(_abs(layer.source.path) in named for layer in layers):
            starts.append(name)
    tools |= {name for name, tool in project.tools.items() if _abs(tool.source.path) in named}
    agents = reachable_agents([name for name in starts if name in project.agents], project)
    used = set(named)
    for name in agents:
        used |= {_abs(layer.source.path) for layer in project.agent_layers.get(name, [])}
        if (prompt := find_agent_prompt(project.agents[name], project)) is not None:
            used |= {_abs(prompt), *_includes(prompt, project)}
        if project.agents[name].builtin:  # a project file that shadows its prompt (a warning)
            from flowrun.manifest.checks.crossref import builtin_prompt_names

            own = project.roots[0] / "prompts"
            used |= {_abs(own / t) for t in builtin_prompt_names(project.agents[name])}
        tools |= {tool for _, tool, _ in tool_entries(project.agents[name].spec)}
        used |= _skill_documents(project, name)
    used |= {_abs(project.tools[name].source.path) for name in tools if name in project.tools}
    return used


def partition(project: Project) -> set[str]:
    """Every file that belongs to one loaded agent, tool, prompt or skill of the project's own
    folder (the files a neighbour can own)."""
    files = {_abs(layer.source.path) for layers in project.agent_layers.values() for layer in layers}
    files |= {_abs(tool.source.path) for tool in project.tools.values()}
    own = project.roots[0]
    for folder in (own / "prompts", own / "skills", own / ".claude" / "skills"):
        if is_dir(folder):
            files |= {_abs(p) for p in folder.rglob("*") if is_file(p)}
    return files


def _includes(prompt: Path, project: Project) -> set[str]:
    """The templates a prompt includes, found as the renderer finds them (one level is enough
    for the file list: an include's own includes are reported at the include)."""
    from flowrun.manifest.templates import analyse

    try:
        info = analyse(prompt.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return set()
    return {_abs(found) for inc in info.includes if (found := project.find_prompt(inc)) is not None}


def _skill_documents(project: Project, agent: str) -> set[str]:
    """The files of the skills an agent's skill tools offer (its library's index too)."""
    from flowrun.manifest.ecosystem.skill_refs import SKILL_TOOLS

    out: set[str] = set()
    for _, name, config in tool_entries(project.agents[agent].spec):
        tool = project.tools.get(name)
        python = getattr(tool.spec.implementation, "python", None) if tool is not None else None
        if tool is None or python not in SKILL_TOOLS:
            continue
        from flowrun.tools.skills import find_skills

        for skill in find_skills(project.roots, {**tool.spec.defaults, **config}).values():
            out.add(_abs(skill.document))
            if skill.folder is not None:
                out |= {_abs(p) for p in skill.folder.rglob("*") if is_file(p)}
                out.add(_abs(skill.folder.parent / "skills.json"))
    return out


def _abs(path: Path | str) -> str:
    return os.path.abspath(path)
