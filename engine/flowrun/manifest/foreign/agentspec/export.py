"""`flowrun export agentspec`: a flowrun workflow as an Agent Spec file (26.2.0). A workflow with
an entry agent becomes that `Agent`; one with steps a `Flow` whose AgentNodes run its agents in
the order the steps name them. Models become llm_configs, tools `ServerTool`s (with their
inputs; `approve: ask` as requires_confirmation), agents other agents call `Agent`s kept under
`$referenced_components`.

What Agent Spec cannot say (loops, fan-out, conditions, budgets, a tool's implementation, an
agent's settings) travels in each component's `metadata.flowrun`, which the spec leaves to the
runtime: `flowrun import` of the file reads it back, so the round trip gives the same workflow,
and any other runtime reads the agents, prompts, models and tools."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from flowrun.manifest.foreign.agentspec.document import FLOWRUN_META
from flowrun.manifest.foreign.agentspec.schema import SCHEMA_VERSION
from flowrun.manifest.foreign.conversion import Doc, Map, Value
from flowrun.manifest.graph import walk_steps
from flowrun.manifest.project import Project
from flowrun.manifest.specs import WorkflowManifest
from flowrun.providers.presets import PRESETS

DEFAULT_URLS = {"anthropic": "https://api.anthropic.com/v1", "openai": "https://api.openai.com/v1"}


def _dump(spec: Value) -> Doc:
    dumped: Doc = spec.model_dump(mode="json", exclude_defaults=True, by_alias=True)
    return dumped


class Exporter:
    def __init__(self, project: Project, workflow: WorkflowManifest) -> None:
        self.project = project
        self.workflow = workflow
        self.referenced: dict[str, Doc] = {}

    def ref(self, key: str) -> dict[str, str]:
        return {"$component_ref": key}

    def model(self, name: str | None) -> dict[str, str]:
        """The llm_config of a model reference (a workflow model name or `provider:model`)."""
        name = name or self.workflow.default_model or self.project.default_model or "default"
        key = f"llm_{name}"
        if key not in self.referenced:
            self.referenced[key] = llm_config(key, name, self._model_spec(name))
        return self.ref(key)

    def _model_spec(self, name: str) -> Doc:
        if name in self.workflow.models:
            return _dump(self.workflow.models[name])
        if name in self.project.models:
            return _dump(self.project.models[name].spec)
        provider, _, model = name.partition(":")
        return {"provider": provider, "model": model or name}

    def agent(self, name: str) -> dict[str, str]:
        key = f"agent_{name}"
        if key not in self.referenced:
            self.referenced[key] = {}  # taken before its tools name it again
            self.referenced[key] = self.agent_component(name, key)
        return self.ref(key)

    def agent_component(self, name: str, key: str) -> Doc:
        loaded = self.project.agents[name]
        spec = loaded.spec
        kept = _dump(spec)
        prompt = self._prompt(kept)
        out: Doc = {"component_type": "Agent", "id": key, "name": name}
        out["description"] = spec.description or None
        out["metadata"] = {FLOWRUN_META: {"agent": kept}}
        out["inputs"], out["outputs"] = [], _properties(spec.output_schema)
        out["llm_config"] = self.model(spec.model if isinstance(spec.model, str) else None)
        out["system_prompt"] = prompt
        out["tools"] = [t for entry in kept.get("tools", []) if (t := self.tool(entry)) is not None]
        out["human_in_the_loop"] = any(_entry_name(e) == "ask_user" for e in kept.get("tools", []))
        for entry in kept.get("tools", []):  # the agents it calls come along
            if _entry_name(entry) in self.project.agents:
                self.agent(_entry_name(entry))
        return out

    def _prompt(self, kept: Doc) -> str:
        """The agent's prompt text (a prompt_file read in); kept as `prompt` in its metadata."""
        prompt = kept.get("prompt")
        if isinstance(prompt, str):
            return prompt
        found = self.project.find_prompt(str(kept.pop("prompt_file"))) if kept.get("prompt_file") else None
        text = found.read_text(encoding="utf-8") if found is not None else ""
        if found is not None:
            kept["prompt"] = text
        return text

    def tool(self, entry: object) -> Doc | None:
        """A ServerTool for a tool entry that names a tool (agents and MCP servers stay in metadata)."""
        name = _entry_name(entry)
        loaded = self.project.tools.get(name)
        if loaded is None or name == "ask_user":
            return None
        spec = loaded.spec
        out: Doc = {"component_type": "ServerTool", "id": f"tool_{name}", "name": name}
        out["description"] = spec.description
        if not loaded.builtin:
            out["metadata"] = {FLOWRUN_META: {"tool": _dump(spec)}}
        out["inputs"] = _properties(spec.parameters)
        config = entry.get(name) if isinstance(entry, Mapping) else None
        out["requires_confirmation"] = isinstance(config, Mapping) and config.get("approve") == "ask"
        return out


def llm_config(key: str, name: str, spec: Map) -> Doc:
    preset = spec.get("preset")
    provider = spec.get("provider")
    url = spec.get("base_url") or (PRESETS[preset].base_url if preset in PRESETS else None)
    url = url or DEFAULT_URLS.get(str(provider), "")
    kind = {"ollama": "OllamaConfig", "vllm": "VllmConfig"}.get(str(preset), "OpenAiCompatibleConfig")
    if provider == "openai" and not spec.get("base_url"):
        kind = "OpenAiConfig"
    out: Doc = {"component_type": kind, "id": key, "name": name, "description": None}
    out["metadata"] = {FLOWRUN_META: {"model": dict(spec)}}
    out["model_id"] = str(spec.get("model", name))
    if kind != "OpenAiConfig":
        out["url"] = url
    params = {k: spec[k] for k in ("temperature", "max_tokens") if k in spec}
    out["default_generation_parameters"] = params or None
    return out


def _entry_name(entry: object) -> str:
    if isinstance(entry, Mapping):
        return str(next(iter(entry)))
    return str(entry)


def _properties(schema: object) -> list[Doc]:
    """Agent Spec properties from a JSON Schema object's properties (required ones without a
    default, as Agent Spec says it)."""
    if not isinstance(schema, Mapping) or not isinstance(schema.get("properties"), Mapping):
        return []
    required = set(schema.get("required") or [])
    out = []
    for name, prop in schema["properties"].items():
        item = {"title": str(name), **(dict(prop) if isinstance(prop, Mapping) else {})}
        item.pop("default", None) if name in required else item.setdefault("default", None)
        out.append(item)
    return out


def export_workflow(project: Project, workflow: WorkflowManifest) -> Doc:
    """The Agent Spec document of `workflow`."""
    ex = Exporter(project, workflow)
    kept = _dump(workflow)
    if workflow.entry:
        ex.agent(workflow.entry)
        root = ex.referenced.pop(f"agent_{workflow.entry}")
        root["metadata"][FLOWRUN_META]["workflow"] = kept
        root["description"] = workflow.description or root["description"]
        root["name"] = workflow.name
        root["metadata"][FLOWRUN_META]["entry"] = workflow.entry
    else:
        root = _flow(ex, workflow)
        root["metadata"] = {FLOWRUN_META: {"workflow": kept}}
    if ex.referenced:
        root["$referenced_components"] = ex.referenced
    root["agentspec_version"] = SCHEMA_VERSION
    return root


def _flow(ex: Exporter, workflow: WorkflowManifest) -> Doc:
    inputs = [
        {"title": name, "type": "string", **({"default": s.default} if not s.is_required else {})}
        for name, s in workflow.inputs.items()
    ]
    nodes: list[Doc] = [
        {"component_type": "StartNode", "id": "start", "name": "start", "inputs": inputs, "outputs": inputs}
    ]
    for i, name in enumerate(_step_agents(workflow)):
        node = {
            "component_type": "AgentNode",
            "id": f"step{i}",
            "name": f"step{i}_{name}",
            "agent": ex.agent(name),
        }
        nodes.append(node)
    nodes.append({"component_type": "EndNode", "id": "end", "name": "end", "inputs": [], "outputs": []})
    edges = [
        {
            "component_type": "ControlFlowEdge",
            "name": f"{a['id']}_to_{b['id']}",
            "from_node": {"$component_ref": a["id"]},
            "to_node": {"$component_ref": b["id"]},
        }
        for a, b in itertools.pairwise(nodes)
    ]
    for node in nodes:
        ex.referenced[str(node["id"])] = node
    return {
        "component_type": "Flow",
        "id": "flow",
        "name": workflow.name,
        "description": workflow.description,
        "inputs": inputs,
        "outputs": [],
        "start_node": {"$component_ref": "start"},
        "nodes": [{"$component_ref": n["id"]} for n in nodes],
        "control_flow_connections": edges,
        "data_flow_connections": [],
    }


def _step_agents(workflow: WorkflowManifest) -> list[str]:
    from flowrun.manifest.kinds import step_kind

    names: list[str] = []
    for at in walk_steps(workflow.steps):
        names += [name for name, _ in step_kind(at.step).agents(at.step)]
    return names
