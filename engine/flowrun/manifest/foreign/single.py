"""Formats whose project is one file: reading it (read_file), and the workflow of a format
whose file is one agent (pydantic-ai's AgentSpec, Microsoft Agent Framework's `kind: Prompt`):
one step, the agent answering the user's message, its answer kept in `FOLDER/NAME.md` (`.json`
with an output schema), which is the workflow's output."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from flowrun.manifest.foreign.conversion import Conversion, Doc
from flowrun.manifest.foreign.keys import mapping
from flowrun.manifest.yaml_source import PathKey, Source, load_source
from flowrun.paths import display_path

if TYPE_CHECKING:
    from flowrun.manifest.foreign.registry import Detected

MESSAGE = {"description": "The user's message to the agent.", "type": "string"}
MAX_MODEL_CALLS = 100  # one agent's run: flowrun's runs are bounded


def read_file(found: Detected, what: str) -> tuple[Conversion, Source | None, Mapping[str, object]]:
    """The conversion of a one-file project and the file's data (`what` it must be: a
    mapping); no source when the file is no YAML mapping (the problems are in the conversion)."""
    conv = Conversion(found.format, found.entry, found.root)
    conv.read(found.entry)
    src, problems = load_source(found.entry, display_path(found.entry))
    conv.diagnostics += problems
    if src.data is None or problems:
        return conv, None, {}
    return conv, src, mapping(conv, src, (), src.data, what)


@dataclass
class OneAgent:
    """What a one-agent file maps to, filled in by its format."""

    name: str
    folder: str  # where its answer is written, e.g. "pydantic-ai"
    agent: Doc
    where: dict[PathKey, PathKey] = field(default_factory=dict)  # agent key -> the file's
    inputs: dict[str, Doc] = field(default_factory=dict)
    models: dict[str, Doc] = field(default_factory=dict)
    servers: dict[str, Doc] = field(default_factory=dict)
    task: str = "{{ message }}"
    model_key: PathKey = ("model",)  # where the file names the model (its settings' problems)
    tools_key: PathKey = ("tools",)  # where the file names its tools (MCP servers' problems)


def add_one_agent(conv: Conversion, src: Source, one: OneAgent) -> None:
    """The agent and its workflow, added to `conv`."""
    conv.add("agent", one.agent, src, (), one.where)
    data: Doc = {"version": 1, "kind": "workflow", "name": one.name}
    if one.agent.get("description"):
        data["description"] = one.agent["description"]
    data["inputs"] = {"message": dict(MESSAGE), **one.inputs}
    if one.models:
        data["models"] = one.models
    if one.servers:
        data["mcp_servers"] = one.servers
    suffix = "json" if "output_schema" in one.agent else "md"
    output = f"{one.folder}/{one.agent['name']}.{suffix}"
    data["steps"] = [{"agent": one.agent["name"], "task": one.task, "output": output}]
    data["output"] = output
    data["limits"] = {"max_total_steps": MAX_MODEL_CALLS}
    conv.add("workflow", data, src, (), {("models",): one.model_key, ("mcp_servers",): one.tools_key})
