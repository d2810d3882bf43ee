"""Agent Spec's agentic components as flowrun agents: an `Agent` (its system prompt with `{{name}}`
bound to the workflow's inputs, its llm_config, tools and toolboxes, declared `outputs` as its
output schema, `human_in_the_loop` as ask_user); `ManagerWorkers` as the manager offered its
workers as tools; a `Swarm` as its first agent, each agent offered the agents it may hand off
to as tools (the conversation returns to the caller instead of moving on); an `A2AAgent` as a
remote agent under `a2a_agents:`; a `Flow` offered as a tool is refused."""

from __future__ import annotations

from collections.abc import Mapping

from flowrun.manifest.foreign.agentspec.build import (
    Build,
    add_inputs,
    json_schema,
    names_in,
    properties,
    template,
)
from flowrun.manifest.foreign.agentspec.document import Comp, flowrun_meta
from flowrun.manifest.foreign.agentspec.tools import tool_entries
from flowrun.manifest.foreign.conversion import Doc, Map, flowrun_name
from flowrun.manifest.yaml_source import PathKey

WHERE: dict[PathKey, PathKey] = {
    ("prompt",): ("system_prompt",),
    ("model",): ("llm_config",),
    ("tools",): ("tools",),
}
A2A = "a2a_agents"


def agentic(build: Build, comp: Comp) -> str | None:
    """The flowrun agent (or remote agent) name of an agentic component, made once."""
    place = (comp.src.display, comp.path)
    if place in build.agents:
        return build.agents[place]
    name: str | None
    if comp.type == "Agent":
        name = _agent(build, comp, place)
    elif comp.type == "ManagerWorkers":
        name = _manager_workers(build, comp, place)
    elif comp.type == "Swarm":
        name = _swarm(build, comp, place)
    elif comp.type in ("A2AAgent", "RemoteAgent"):
        name = _a2a(build, comp, place)
    else:
        message = f"{comp.type} '{comp.name}' is not an agent flowrun can run"
        hint = "an Agent, ManagerWorkers, Swarm or A2AAgent"
        build.conv.problem(comp.src, comp.at("component_type"), message, hint, "unsupported")
        return None
    return name


def _agent(build: Build, comp: Comp, place: tuple[str, tuple[object, ...]]) -> str:
    kept = flowrun_meta(comp).get("agent")
    if isinstance(kept, Mapping):
        return _kept_agent(build, comp, place, kept)
    name = build.unique(comp.name)
    build.agents[place] = name
    data: Doc = {"version": 1, "kind": "agent", "name": name}
    description = comp.get("description")
    if isinstance(description, str) and description.strip():
        data["description"] = description.strip()
    add_inputs(build, comp)
    prompt = comp.get("system_prompt")
    data["prompt"] = template(prompt) if isinstance(prompt, str) else ""
    for placeholder in names_in(prompt) if isinstance(prompt, str) else []:
        if placeholder not in build.inputs:  # Agent Spec infers the inputs its templates name
            build.inputs[placeholder] = {"description": placeholder}
            build.conv.note(comp.src, comp.at("system_prompt"), f"the workflow input `{placeholder}`")
    model = build.models.ref(build.doc.child(comp, "llm_config"))
    if model is not None:
        data["model"] = model
    tools = tool_entries(build, comp) + tool_entries(build, comp, "toolboxes")
    if comp.get("human_in_the_loop", True) is not False and "ask_user" not in tools:
        tools.append("ask_user")
        build.conv.note(comp.src, comp.path, f"agent {name}: ask_user (human_in_the_loop)")
    data["tools"] = tools
    outputs = properties(comp, "outputs")
    if outputs:
        data["output_schema"] = json_schema(outputs) | {"additionalProperties": False}
        build.conv.note(comp.src, comp.at("outputs"), f"agent {name}: its output schema")
    build.conv.add("agent", data, comp.src, comp.path, WHERE)
    build.conv.note(comp.src, comp.path, f"agent {name}: system_prompt as its prompt")
    return name


def _kept_agent(build: Build, comp: Comp, place: tuple[str, tuple[object, ...]], kept: Map) -> str:
    """An agent `flowrun export` wrote: the flowrun agent in its metadata, its prompt from
    `system_prompt` (edited or not), its tools' manifests from its ServerTools."""
    name = build.unique(str(kept.get("name", comp.name)))
    build.agents[place] = name
    data = {**dict(kept), "name": name}
    prompt = comp.get("system_prompt")
    if isinstance(prompt, str) and prompt != kept.get("prompt"):
        data["prompt"] = template(prompt)
    tool_entries(build, comp)
    build.conv.add("agent", data, comp.src, comp.path, WHERE)
    build.conv.note(comp.src, comp.path, f"agent {name}: the flowrun agent kept in its metadata")
    return name


def _manager_workers(build: Build, comp: Comp, place: tuple[str, tuple[object, ...]]) -> str | None:
    manager = build.doc.child(comp, "group_manager")
    if manager is None:
        build.conv.problem(
            comp.src, comp.at("group_manager"), "ManagerWorkers needs a group_manager", "", "missing-key"
        )
        return None
    name = agentic(build, manager)
    build.agents[place] = name or ""
    workers = [w for _, c in build.doc.children(comp, "workers") if (w := agentic(build, c))]
    if name is not None:
        _offer(build, name, workers)
        build.conv.note(
            comp.src, comp.path, f"the manager {name} offered its workers as tools: {', '.join(workers)}"
        )
    return name


def _swarm(build: Build, comp: Comp, place: tuple[str, tuple[object, ...]]) -> str | None:
    first = build.doc.child(comp, "first_agent")
    if first is None:
        build.conv.problem(comp.src, comp.at("first_agent"), "Swarm needs a first_agent", "", "missing-key")
        return None
    name = agentic(build, first)
    build.agents[place] = name or ""
    for i, pair in enumerate(comp.get("relationships") or []):
        if not isinstance(pair, list) or len(pair) != 2:
            continue
        caller = build.doc.comp(comp, pair[0], comp.at("relationships", i, 0))
        callee = build.doc.comp(comp, pair[1], comp.at("relationships", i, 1))
        if caller is not None and callee is not None:
            a, b = agentic(build, caller), agentic(build, callee)
            if a and b:
                _offer(build, a, [b])
    how = "each agent offered the agents it may hand off to as tools; the answer comes back to the caller"
    build.conv.note(comp.src, comp.at("relationships"), how, "approximated")
    return name


def _offer(build: Build, name: str, others: list[str]) -> None:
    piece = build.conv.named("agent").get(name)
    if piece is None:
        return
    tools = piece.data.setdefault("tools", [])
    for other in others:
        if other != name and other not in tools:
            tools.append(other)


def _a2a(build: Build, comp: Comp, place: tuple[str, tuple[object, ...]]) -> str | None:
    url = comp.get("agent_url") or comp.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        message = f"{comp.type} '{comp.name}' needs an http(s) `agent_url`"
        build.conv.problem(comp.src, comp.at("agent_url"), message, "", "invalid")
        return None
    name = build.unique(comp.name)
    build.agents[place] = name
    spec: Doc = {"url": url}
    description = comp.get("description")
    if isinstance(description, str) and description.strip():
        spec["description"] = description.strip()
    config = comp.get("connection_config")
    if isinstance(config, Mapping):
        if isinstance(config.get("timeout"), int | float):
            spec["timeout_s"] = float(config["timeout"])
        if isinstance(config.get("headers"), Mapping):
            spec["headers"] = {str(k): str(v) for k, v in config["headers"].items()}
    build.remote[name] = spec
    build.conv.note(comp.src, comp.path, f"the remote A2A agent {name}")
    return name


def is_remote(build: Build, name: str) -> bool:
    return name in build.remote


def relay(build: Build, remote: str) -> str:
    """A local agent that hands the task to a remote agent and answers with its reply (a run's
    entry is a local agent)."""
    name = build.unique(f"{remote}_caller")
    prompt = (
        f"Send the task you are given to the agent {remote} (your only tool) and answer with its "
        "reply, word for word."
    )
    data = {"version": 1, "kind": "agent", "name": name, "prompt": prompt, "tools": [remote]}
    build.conv.add("agent", data, build.doc.root.src, build.doc.root.path)
    return flowrun_name(name)
