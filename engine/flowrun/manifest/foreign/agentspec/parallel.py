"""A `ParallelFlowNode`: its subflows run at the same time, each reading the node's inputs, and
the node's outputs are the union of theirs. The spec forbids two subflows with an output of the
same name, or with inputs of the same name and different types; each subflow here has one node
that does work (a `parallel:` branch) or none (it passes its inputs through), then a step
without a model writes what the subflows' EndNodes received as the node's outputs."""

from __future__ import annotations

from flowrun.manifest.foreign.agentspec.build import Build, properties
from flowrun.manifest.foreign.agentspec.document import Comp
from flowrun.manifest.foreign.conversion import Doc

NOT_TYPE = ("title", "description", "default")  # what two properties of one type may differ in


def subflow_io(build: Build, flow: Comp, key: str) -> list[Doc]:
    """A subflow's inputs (`key` "inputs") or outputs ("outputs"): as the Flow lists them, else
    as its StartNode's outputs or its EndNodes' inputs say."""
    listed = [p for _, p in properties(flow, key)]
    if listed or flow.get(key) is not None:
        return listed
    node_type, node_key = ("StartNode", "outputs") if key == "inputs" else ("EndNode", "inputs")
    nodes = [n for _, n in build.doc.children(flow, "nodes") if n.type == node_type]
    return [p for n in nodes for _, p in properties(n, node_key)]


def _type_of(prop: Doc) -> Doc:
    return {k: v for k, v in prop.items() if k not in NOT_TYPE}


def check(build: Build, node: Comp, subflows: list[Comp]) -> bool:
    """False (with the problem at the node) when two subflows share an output's name, or an
    input's name with another type."""
    outputs: dict[str, str] = {}
    inputs: dict[str, Doc] = {}
    ok = True
    for sub in subflows:
        for prop in subflow_io(build, sub, "outputs"):
            title = str(prop["title"])
            if title in outputs:
                message = (
                    f"the subflows '{outputs[title]}' and '{sub.name}' of ParallelFlowNode "
                    f"'{node.name}' both have the output '{title}'"
                )
                build.conv.problem(node.src, node.at("subflows"), message, "rename one of them", "invalid")
                ok = False
            outputs.setdefault(title, sub.name)
        for prop in subflow_io(build, sub, "inputs"):
            title = str(prop["title"])
            if title in inputs and _type_of(inputs[title]) != _type_of(prop):
                message = (
                    f"two subflows of ParallelFlowNode '{node.name}' have the input '{title}' "
                    "with different types"
                )
                build.conv.problem(node.src, node.at("subflows"), message, "give them one type", "invalid")
                ok = False
            inputs.setdefault(title, prop)
    return ok
