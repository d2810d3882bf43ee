"""An Agent Spec `Flow` as flowrun steps. Each node that does work is a step whose answer is
kept in the run folder (`agentspec/NODE.txt` for one text output, else `agentspec/NODE.json`
with one key per output); a data edge is a template that reads the source node's file (a
StartNode's outputs are the workflow's inputs). `LlmNode`: an agent without tools whose task is
the prompt template; `AgentNode`: the agent, its inputs in the task; `ToolNode` and `ApiNode`:
a step that calls the tool (the HTTP request) once without a model (flowrun's `direct`
provider); `FlowNode`: its subflow's steps in place, then a step that writes its outputs;
`BranchingNode`: an `if:` on the nodes after it, or a `loop:` when a branch goes back;
`MapNode`/`ParallelMapNode`: its items, a `foreach` over them, its collected outputs;
`ParallelFlowNode`: a `parallel:` step of its subflows' single nodes, then its outputs;
`EndNode`: a step that writes what it receives as the flow's outputs (only the EndNode reached
runs)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from flowrun.manifest.foreign.agentspec import graph
from flowrun.manifest.foreign.agentspec.build import Build, is_text, properties
from flowrun.manifest.foreign.agentspec.document import Comp
from flowrun.manifest.foreign.conversion import Doc, Map, Value, flowrun_name

DIR = "agentspec"
LOOP_LIMIT = 10  # Agent Spec's cycles have no bound; flowrun's loops do
PASSIVE = ("StartNode", "EndNode", "BranchingNode", "OutputMessageNode")
WORKERS = (
    "LlmNode",
    "AgentNode",
    "ToolNode",
    "ApiNode",
    "FlowNode",
    "MapNode",
    "ParallelMapNode",
    "ParallelFlowNode",
    "InputMessageNode",
)


@dataclass
class Node:
    key: str
    comp: Comp
    name: str  # flowrun's name for it (its agent's, its file's)


@dataclass
class FlowBuild:
    build: Build
    flow: Comp
    nodes: dict[str, Node] = field(default_factory=dict)
    data: dict[tuple[str, str], list[tuple[str, str]]] = field(
        default_factory=dict
    )  # (node, input) -> sources
    start: str = ""
    item: dict[str, str] = field(default_factory=dict)  # subflow input -> the foreach item's expression
    end: str = ""  # the file each EndNode writes the flow's outputs to ("": none)
    end_props: list[Doc] = field(default_factory=list)  # the flow's outputs

    def outputs(self, key: str) -> list[tuple[int, Doc]]:
        return properties(self.nodes[key].comp, "outputs")

    def is_text(self, key: str) -> bool:
        return is_text([p for _, p in self.outputs(key)])

    def file(self, key: str) -> str:
        return f"{DIR}/{self.nodes[key].name}.{'txt' if self.is_text(key) else 'json'}"


def node_key(comp: Comp) -> str:
    found = comp.get("id")
    return str(found) if found is not None else json.dumps(comp.path)


def read_nodes(fb: FlowBuild) -> None:
    build, flow = fb.build, fb.flow
    for _, comp in build.doc.children(flow, "nodes"):
        key = node_key(comp)
        fb.nodes[key] = Node(
            key, comp, build.unique(comp.name) if comp.type in WORKERS else flowrun_name(comp.name)
        )
    start = build.doc.child(flow, "start_node")
    if start is not None:
        fb.start = node_key(start)
        fb.nodes.setdefault(fb.start, Node(fb.start, start, flowrun_name(start.name)))
    for _i, edge in build.doc.children(flow, "data_flow_connections"):
        src = build.doc.child(edge, "source_node")
        dst = build.doc.child(edge, "destination_node")
        if src is None or dst is None:
            continue
        where = (node_key(dst), str(edge.get("destination_input")))
        fb.data.setdefault(where, []).append((node_key(src), str(edge.get("source_output"))))


def control_edges(fb: FlowBuild) -> list[graph.Edge]:
    out = []
    for _i, edge in fb.build.doc.children(fb.flow, "control_flow_connections"):
        src = fb.build.doc.child(edge, "from_node")
        dst = fb.build.doc.child(edge, "to_node")
        if src is not None and dst is not None:
            branch = edge.get("from_branch") or graph.NEXT
            out.append(graph.Edge(node_key(src), str(branch), node_key(dst), edge.path))
    return out


def source_expr(fb: FlowBuild, key: str, output: str) -> str:
    """The Jinja2 expression of a node's output."""
    node = fb.nodes.get(key)
    if node is None or node.comp.type in ("StartNode",):
        if output in fb.item:
            return fb.item[output]
        return output if output.isidentifier() else f"inputs[{output!r}]"
    path = fb.file(key)
    if fb.is_text(key):
        return f"workspace.read({path!r})"
    return f"workspace.json({path!r}).get({output!r})"


def input_expr(fb: FlowBuild, key: str, prop: Map) -> str:
    """The expression a node's input reads: its data edges' sources (the one that ran last when
    several did), else an output of that name, else its default."""
    name = str(prop["title"])
    sources = fb.data.get((key, name))
    if sources is None and not any(k == key for k, _ in fb.data):  # no data edges: by name
        sources = [
            (k, name)
            for k, n in fb.nodes.items()
            if k != key and n.comp.type != "EndNode" and any(p["title"] == name for _, p in fb.outputs(k))
        ]
    default = jinja_literal(prop.get("default", "" if "default" in prop else None))
    expr = default if sources else (default if "default" in prop else source_expr(fb, fb.start, name))
    for src_key, output in sources or []:
        node = fb.nodes.get(src_key)
        if node is None or node.comp.type == "StartNode":
            expr = source_expr(fb, src_key, output)
            continue
        path = fb.file(src_key)
        expr = f"({source_expr(fb, src_key, output)} if workspace.exists({path!r}) else {expr})"
    return expr


def jinja_literal(value: Value) -> str:
    """`value` as a Jinja2 literal (JSON's, but `none` for null)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return json.dumps(value)
    return repr(value)  # a list or mapping: Jinja2 reads Python's literals


def condition(fb: FlowBuild, key: str, branch: str) -> str:
    """The expression that is true when BranchingNode `key` takes `branch`."""
    comp = fb.nodes[key].comp
    mapping = comp.get("mapping") if isinstance(comp.get("mapping"), Mapping) else {}
    props = properties(comp, "inputs")
    value = input_expr(fb, key, props[0][1]) if props else "''"
    text = f"({value} | string | lower)"
    keys = [str(k).lower() for k, v in mapping.items() if v == branch]
    if branch == "default":
        return f"{text} not in {sorted(str(k).lower() for k in mapping)!r}"
    return f"{text} in {sorted(keys)!r}"


def guard(fb: FlowBuild, ways: list[list[tuple[str, str]]], inside: set[str]) -> str | None:
    """An `if:` expression of the ways to reach a node (conditions of nodes in `inside`, the loop
    it is in, are kept; the loop's own exit is not a condition inside it)."""
    parts = []
    for way in ways:
        terms = [condition(fb, k, b) for k, b in way if not inside or k in inside]
        if not terms:
            return None
        parts.append(" and ".join(f"({t})" for t in terms))
    return " or ".join(f"({p})" for p in parts) if len(parts) > 1 else parts[0] if parts else None
