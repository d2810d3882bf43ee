"""Oracle's Open Agent Specification: one file (YAML or JSON) whose top level is a component
(`component_type:`), checked against the spec's JSON Schema, then read as a flowrun workflow: an
agentic component (Agent, ManagerWorkers, Swarm, A2AAgent) as one agent step answering the
user's message, a Flow as its nodes' steps."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from flowrun.manifest.foreign.agentspec.document import has_runnable, is_component_file, is_referenced_file
from flowrun.manifest.foreign.conversion import Doc
from flowrun.manifest.foreign.registry import Detected, ForeignFormat

if TYPE_CHECKING:
    from flowrun.manifest.foreign.agentspec.build import Build
    from flowrun.manifest.foreign.conversion import Conversion

AGENTIC = ("Agent", "ManagerWorkers", "Swarm", "A2AAgent", "RemoteAgent")
MESSAGE = {"description": "The user's message to the agent.", "type": "string"}
ANSWER = "answer"  # agentspec/answer.txt|json: what the root agent answers


class AgentSpecFormat(ForeignFormat):
    name = "agentspec"
    title = "Oracle Agent Spec"

    def detect(self, path: Path) -> Detected | None:
        if is_component_file(path):
            return Detected(self.name, path, path.parent)
        return None

    def parts(self, folder: Path) -> set[Path]:
        return {p for p in folder.iterdir() if is_referenced_file(p) and not has_runnable(p)}

    def convert(self, found: Detected) -> Conversion:
        from flowrun.manifest.foreign.agentspec import document, schema
        from flowrun.manifest.foreign.agentspec.build import Build
        from flowrun.manifest.foreign.agentspec.models import Models
        from flowrun.manifest.foreign.conversion import Conversion

        conv = Conversion(self.name, found.entry, found.root)
        doc = document.load(conv, found.entry)
        if doc is None:
            return conv
        conv.diagnostics += schema.problems(doc.root.data, doc.root.src)
        if conv.errors:
            return conv
        build = Build(conv, doc, Models(conv))
        data = _workflow(build)
        if data is not None:
            conv.add("workflow", data, doc.root.src, (), {("steps",): ()})
        return conv


def _workflow(build: Build) -> Doc | None:
    from flowrun.manifest.foreign.agentspec.agents import agentic, is_remote, relay
    from flowrun.manifest.foreign.agentspec.build import is_text, properties
    from flowrun.manifest.foreign.agentspec.document import flowrun_meta
    from flowrun.manifest.foreign.agentspec.flows import DIR, FlowBuild
    from flowrun.manifest.foreign.agentspec.parallel import subflow_io
    from flowrun.manifest.foreign.agentspec.steps import flow_steps
    from flowrun.manifest.foreign.conversion import flowrun_name

    root = build.doc.root
    kept = flowrun_meta(root).get("workflow")
    if isinstance(kept, dict):
        return _kept_workflow(build, kept)
    output: str | None = None
    if root.type in AGENTIC:
        name = agentic(build, root)
        if name is None:
            return None
        if is_remote(build, name):
            name = relay(build, name)
        structured = bool(properties(root, "outputs"))
        output = f"{DIR}/{ANSWER}.{'json' if structured else 'txt'}"
        build.inputs = {"message": dict(MESSAGE), **build.inputs}
        steps: list[Doc] = [{"agent": name, "task": "{{ message }}", "output": output}]
    elif root.type == "Flow":
        fb = FlowBuild(build, root, end_props=subflow_io(build, root, "outputs"))
        if fb.end_props:  # each EndNode writes the flow's outputs: what the run answers
            kind = "txt" if is_text(fb.end_props) else "json"
            fb.end = output = f"{DIR}/{build.unique('outputs')}.{kind}"
        steps = flow_steps(fb)
    else:
        message = f"a {root.type} is not something flowrun runs on its own"
        build.conv.problem(
            root.src,
            ("component_type",),
            message,
            "the file's top component: an Agent or a Flow",
            "unsupported",
        )
        return None
    data: Doc = {"version": 1, "kind": "workflow", "name": flowrun_name(root.name)}
    description = root.get("description")
    if isinstance(description, str) and description.strip():
        data["description"] = description.strip()
    data["inputs"] = build.inputs
    default = build.models.default()
    data["models"] = build.models.specs
    data["default_model"] = default
    data["steps"] = steps
    for key, value in (("mcp_servers", build.servers), ("a2a_agents", build.remote)):
        if value:
            data[key] = value
    if output is not None and "output" not in data:
        data["output"] = output
    return data


def _kept_workflow(build: Build, kept: Doc) -> Doc:
    """A workflow `flowrun export` wrote: the flowrun workflow in the root's metadata, with the
    agents of the file (each Agent component, wherever it is) and their tools."""
    from flowrun.manifest.foreign.agentspec.agents import agentic
    from flowrun.manifest.foreign.agentspec.document import REFERENCED, Comp

    root = build.doc.root
    if root.type == "Agent":
        agentic(build, root)
    table = root.get(REFERENCED)
    for key, value in table.items() if isinstance(table, dict) else []:
        if isinstance(value, dict) and value.get("component_type") == "Agent":
            agentic(build, Comp(value, root.src, (REFERENCED, key), ((root.path, table),)))
    build.conv.note(root.src, ("metadata",), "the flowrun workflow kept in its metadata")
    return {**kept, "version": 1, "kind": "workflow"}


FORMAT = AgentSpecFormat()
