"""The team of a workflow as the web UI draws it (`GET /v1/workflows/{name}/team`, `GET
/v1/runs/{id}/team`): its steps as a tree (sequence, loop, parallel, foreach, `if:`, and each
step kind's own), the agents a run may start with who may call whom, and each agent's prompt as
written (the template a "Replay with edits" changes). Read from the manifests through
manifest/graph.py, the module `validate` and the runtime ask, so the picture and a run agree."""

from __future__ import annotations

import math

from flowrun.api import Workflow
from flowrun.manifest.graph import agent_callees, run_agents, tool_entries
from flowrun.manifest.kinds import step_kind, tool_kind_for
from flowrun.manifest.project import Loaded, Project, find_agent_prompt
from flowrun.manifest.specs import AgentManifest, StepSpec, WorkflowManifest
from flowrun.pinned import read_whole

PROMPT_CHARS = 200_000  # a prompt template longer than this is named, not sent


def team_graph(workflow: Workflow) -> dict[str, object]:
    """The workflow's steps, agents and calls (see the module's docstring)."""
    spec, project = workflow.spec, workflow.project
    names = sorted(run_agents(spec, project))
    return {
        "workflow": workflow.name,
        "file": str(workflow.path.resolve()),
        "steps": _steps(spec),
        "agents": [_agent(project.agents[name], project, spec) for name in names if name in project.agents],
    }


def _steps(spec: WorkflowManifest) -> list[dict[str, object]]:
    if spec.entry:
        entry = spec.entry
        return [{"kind": "agent", "agents": [entry], "label": entry, "steps": [], "repeats": 1, "if": None}]
    return [_step(step) for step in spec.steps or []]


def _step(step: StepSpec) -> dict[str, object]:
    """One step: its kind, the agents it runs itself, its nested steps, how often they repeat
    and its condition."""
    kind = step_kind(step)
    agents = [name for name, _ in kind.agents(step)]
    repeats = kind.repeats(step, {})
    node: dict[str, object] = {
        "kind": kind.name,
        "agents": agents,
        "label": " + ".join(agents) or kind.name,
        "steps": [_step(nested.step) for nested in kind.children(step)],
        "repeats": None if math.isinf(repeats) else repeats,  # null: as many as the run finds
        "if": step.if_,
    }
    until = getattr(getattr(step, "loop", None), "until", None)
    if until:
        node["until"] = until
    return node


def _agent(loaded: Loaded[AgentManifest], project: Project, workflow: WorkflowManifest) -> dict[str, object]:
    spec = loaded.spec
    callees = set(agent_callees(project, spec.name))
    tools = [name for _, name, _ in tool_entries(spec) if not _is_agent(name, project, callees)]
    return {
        "name": spec.name,
        "description": spec.description,
        "model": spec.model or workflow.default_model,
        "max_steps": spec.max_steps,
        "session": spec.session,
        "calls": sorted(callees),
        "tools": tools,
        "prompt": _prompt(loaded, project),
        "file": str(loaded.source.path) if loaded.source.path else None,
    }


def _is_agent(name: str, project: Project, callees: set[str]) -> bool:
    kind = tool_kind_for(name, project)
    return name in callees or (kind is not None and bool(kind.agents_called(name, project)))


def _prompt(loaded: Loaded[AgentManifest], project: Project) -> dict[str, object]:
    """The agent's prompt as written: inline text, or its template file's text."""
    spec = loaded.spec
    if isinstance(spec.prompt, str):
        return {"source": "inline", "text": spec.prompt}
    if spec.prompt is not None:
        return {"source": "mcp", "text": None, "server": spec.prompt.mcp, "name": spec.prompt.name}
    path = find_agent_prompt(loaded, project)
    if path is None:
        return {"source": "file", "text": None, "file": spec.prompt_file}
    raw = read_whole(path)
    if len(raw) > PROMPT_CHARS:
        return {"source": "file", "text": None, "file": str(path), "note": f"{len(raw)} bytes: too long"}
    return {"source": "file", "text": raw.decode("utf-8", "replace"), "file": str(path)}
