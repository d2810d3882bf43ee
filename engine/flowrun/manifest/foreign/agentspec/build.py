"""What reading one Agent Spec file builds up: the workflow's inputs, models and MCP servers, the
agents and tools made so far (each component once), and how Agent Spec's properties and
`{{name}}` templates read in flowrun terms."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from flowrun.manifest.foreign import placeholders
from flowrun.manifest.foreign.agentspec.document import Comp, Document
from flowrun.manifest.foreign.agentspec.models import Models
from flowrun.manifest.foreign.conversion import Conversion, Doc, Map, flowrun_name

# Agent Spec's templates: `{{name}}` (Jinja2-like; only names are placeholders)
TEMPLATE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
TYPES = {"string", "integer", "number", "boolean", "array", "object", "null"}
FLOWRUN_TYPES = {"array": "list"}


@dataclass
class Build:
    conv: Conversion
    doc: Document
    models: Models
    inputs: dict[str, Doc] = field(default_factory=dict)
    servers: dict[str, Doc] = field(default_factory=dict)
    remote: dict[str, Doc] = field(default_factory=dict)  # the workflow's a2a_agents
    agents: dict[tuple[str, tuple[object, ...]], str] = field(default_factory=dict)  # component -> name
    tools: dict[str, Doc] = field(default_factory=dict)  # tool pieces made, by name
    names: set[str] = field(default_factory=set)  # agent and tool names taken

    def unique(self, raw: str) -> str:
        name = flowrun_name(raw)
        base, n = name, 2
        while name in self.names:
            name = flowrun_name(f"{base}_{n}")
            n += 1
        self.names.add(name)
        return name


def properties(comp: Comp, key: str) -> list[tuple[int, Doc]]:
    """The properties (JSON Schemas with a `title`) listed at `comp.key`, with their index."""
    items = comp.get(key)
    if not isinstance(items, list):
        return []
    return [
        (i, dict(p))
        for i, p in enumerate(items)
        if isinstance(p, Mapping) and isinstance(p.get("title"), str)
    ]


def is_text(props: list[Doc]) -> bool:
    """Outputs that are one string: written and read as plain text, not a JSON object."""
    return len(props) == 1 and props[0].get("type", "string") == "string"


def json_schema(props: list[tuple[int, Doc]]) -> Doc:
    """An object schema whose properties are `props` (required: those without a default)."""
    out: Doc = {"type": "object", "properties": {}}
    required = []
    for _, prop in props:
        title = prop["title"]
        out["properties"][title] = {k: v for k, v in prop.items() if k != "title"} or {}
        if "default" not in prop:
            required.append(title)
    if required:
        out["required"] = required
    return out


def workflow_input(prop: Map) -> Doc:
    """A flowrun workflow input from an Agent Spec property."""
    out: Doc = {}
    description = prop.get("description")
    out["description"] = (
        str(description) if isinstance(description, str) and description else str(prop["title"])
    )
    kind = prop.get("type")
    if isinstance(kind, str) and kind in ("array", "number", "integer", "boolean"):
        out["type"] = FLOWRUN_TYPES.get(kind, kind)
    if "default" in prop:
        out["required"] = False
        default = prop["default"]
        out["default"] = default if default is not None else ""
    return out


def add_inputs(build: Build, comp: Comp, key: str = "inputs") -> None:
    for i, prop in properties(comp, key):
        name = prop["title"]
        if name not in build.inputs:
            build.inputs[name] = workflow_input(prop)
            build.conv.note(comp.src, comp.at(key, i), f"the workflow input `{name}`")


def template(text: str, render: dict[str, str] | None = None) -> str:
    """Agent Spec text as a flowrun template: `{{name}}` as the input `name` (or as what `render`
    gives for it), everything else literal."""

    def one(found: re.Match[str]) -> str | None:
        name = found.group(1)
        if render is not None and name in render:
            return render[name]
        return placeholders.variable(name)

    return placeholders.template(text, TEMPLATE, one)


def names_in(text: str) -> list[str]:
    return placeholders.names(text, TEMPLATE)
