"""Who calls whom in a project: an agent's tool entries, the agents it may call as tools, the
steps of a workflow wherever they are nested, the agents a workflow starts, and everything
reachable from them. `validate` and the runtime ask these questions here, so both always agree;
what a kind contributes (a step's nested steps, the agent an entry calls) comes from the kind."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from flowrun.manifest.guardrails.specs import JudgeGuardrail
from flowrun.manifest.kinds import StepAt, step_kind, tool_kind_for
from flowrun.manifest.kinds import YamlPath as YamlPath  # (re-exported: checks import it from here)
from flowrun.manifest.project import Project
from flowrun.manifest.specs import AgentManifest, StepSpec, WorkflowManifest


def tool_entries(spec: AgentManifest) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(index, name, config) for each entry of an agent's `tools` list."""
    for i, entry in enumerate(spec.tool_list):
        if isinstance(entry, str):
            yield i, entry, {}
        else:
            name, config = next(iter(entry.items()))
            yield i, name, dict(config or {})


MEMORY_TOOL = "memory"  # what an agent with `memory:` is offered without listing it


def offered_tools(spec: AgentManifest) -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, config) of each tool an agent is offered: its `tools` entries, then the `memory`
    tool when it declares `memory:` and does not list it."""
    listed = False
    for _, name, config in tool_entries(spec):
        listed = listed or name == MEMORY_TOOL
        yield name, config
    if spec.memory is not None and not listed:
        yield MEMORY_TOOL, {}


def agent_callees(project: Project, name: str) -> list[str]:
    """The agents `name` may call as tools, and the agent that reflects on its memory."""
    loaded = project.agents.get(name)
    if loaded is None:
        return []
    found: list[str] = []
    for _, entry, _ in tool_entries(loaded.spec):
        kind = tool_kind_for(entry, project)
        if kind is not None:
            found += kind.agents_called(entry, project)
    memory = loaded.spec.memory_config
    if memory is not None and isinstance(memory.reflect, str) and memory.reflect in project.agents:
        found.append(memory.reflect)
    return found


def judges(project: Project, name: str) -> list[str]:
    """The agents that judge `name`'s guardrails (a run starts them to check its work)."""
    loaded = project.agents.get(name)
    guardrails = loaded.spec.guardrails if loaded is not None else None
    if guardrails is None:
        return []
    checks = [*guardrails.input, *guardrails.output, *(c for tools in guardrails.tools for c in tools.check)]
    return [check.judge for check in checks if isinstance(check, JudgeGuardrail)]


def reachable_agents(starts: list[str], project: Project) -> set[str]:
    seen: set[str] = set()
    todo = list(starts)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(agent_callees(project, name))
        # (an unknown judge is reported where it is named)
        todo.extend(j for j in judges(project, name) if j in project.agents)
    return seen


def walk_steps(
    steps: list[StepSpec] | None, parts: YamlPath = ("steps",), names: frozenset[str] = frozenset()
) -> Iterator[StepAt]:
    """Every step of a workflow, with its YAML path: nested ones (a loop's body, parallel
    branches, a foreach's step) right after the step that holds them."""
    for i, step in enumerate(steps or []):
        yield from _walk(StepAt(step, (*parts, i), names))


def _walk(at: StepAt) -> Iterator[StepAt]:
    yield at
    for nested in step_kind(at.step).children(at.step):
        yield from _walk(StepAt(nested.step, (*at.parts, *nested.parts), at.names | nested.names))


def workflow_agents(spec: WorkflowManifest) -> list[tuple[str, YamlPath]]:
    """(agent name, YAML path) of the entry agent and every step's agent."""
    starts: list[tuple[str, YamlPath]] = [(spec.entry, ("entry",))] if spec.entry else []
    for at in walk_steps(spec.steps):
        starts += [(name, (*at.parts, *rel)) for name, rel in step_kind(at.step).agents(at.step)]
    return starts


def run_agents(spec: WorkflowManifest, project: Project) -> set[str]:
    """Every agent a run of the workflow may start."""
    starts = [name for name, _ in workflow_agents(spec) if name in project.agents]
    return reachable_agents(starts, project)
