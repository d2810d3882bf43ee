"""Who calls whom in a project: an agent's tool entries, the agents it may call as tools, the
agents a workflow starts, and everything reachable from them. `validate` and the runtime ask
these questions here, so both always agree."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from flowrun.manifest.specs import (
    AgentManifest,
    AgentStep,
    ForeachStep,
    LoopStep,
    ParallelStep,
    Step,
    WorkflowManifest,
)

if TYPE_CHECKING:
    from flowrun.manifest.project import Project

YamlPath = tuple[str | int, ...]


def tool_entries(spec: AgentManifest) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(index, name, config) for each entry of an agent's `tools` list."""
    for i, entry in enumerate(spec.tool_list):
        if isinstance(entry, str):
            yield i, entry, {}
        else:
            name, config = next(iter(entry.items()))
            yield i, name, dict(config or {})


def agent_callees(project: Project, name: str) -> list[str]:
    """The agents `name` may call as tools."""
    loaded = project.agents.get(name)
    if loaded is None:
        return []
    return [n for _, n, _ in tool_entries(loaded.spec) if n in project.agents and n not in project.tools]


def reachable_agents(starts: list[str], project: Project) -> set[str]:
    seen: set[str] = set()
    todo = list(starts)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(agent_callees(project, name))
    return seen


def iter_steps(steps: list[Step] | None, parts: YamlPath) -> Iterator[tuple[Step, YamlPath]]:
    """Every step of a workflow, with its YAML path: loops' bodies, parallel branches and
    foreach bodies included."""
    for i, step in enumerate(steps or []):
        here = (*parts, i)
        yield step, here
        if isinstance(step, LoopStep):
            yield from iter_steps(step.loop.steps, (*here, "loop", "steps"))
        elif isinstance(step, ParallelStep):
            for j, branch in enumerate(step.parallel):
                yield branch, (*here, "parallel", j)
        elif isinstance(step, ForeachStep):
            yield step.foreach.step, (*here, "foreach", "step")


def workflow_agents(spec: WorkflowManifest) -> list[tuple[str, YamlPath]]:
    """(agent name, YAML path) of the entry agent and every step's agent."""
    starts: list[tuple[str, YamlPath]] = [(spec.entry, ("entry",))] if spec.entry else []
    for step, parts in iter_steps(spec.steps, ("steps",)):
        if isinstance(step, AgentStep):
            starts.append((step.agent, (*parts, "agent")))
    return starts


def run_agents(spec: WorkflowManifest, project: Project) -> set[str]:
    """Every agent a run of the workflow may start."""
    starts = [name for name, _ in workflow_agents(spec) if name in project.agents]
    return reachable_agents(starts, project)
