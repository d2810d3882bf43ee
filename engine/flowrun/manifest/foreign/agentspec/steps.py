"""The step of each Flow node that does work (see flows.py), and the Flow as a workflow."""

from __future__ import annotations

import json

from flowrun.manifest.foreign.agentspec import graph
from flowrun.manifest.foreign.agentspec.agents import agentic, is_remote, relay
from flowrun.manifest.foreign.agentspec.build import Build, add_inputs, json_schema, properties, template
from flowrun.manifest.foreign.agentspec.document import Comp
from flowrun.manifest.foreign.agentspec.flows import (
    LOOP_LIMIT,
    PASSIVE,
    FlowBuild,
    Node,
    condition,
    control_edges,
    guard,
    input_expr,
    read_nodes,
)
from flowrun.manifest.foreign.agentspec.tools import tool_entry
from flowrun.manifest.foreign.conversion import Doc

LLM_PROMPT = "Answer the request you are given."  # an LlmNode sends only its prompt template


def _schema_of(fb: FlowBuild, key: str) -> Doc | None:
    return None if fb.is_text(key) else json_schema(fb.outputs(key)) | {"additionalProperties": False}


def _rendered(fb: FlowBuild, node: Node) -> dict[str, str]:
    return {
        str(p["title"]): "{{ " + input_expr(fb, node.key, p) + " }}"
        for _, p in properties(node.comp, "inputs")
    }


def _inputs_text(fb: FlowBuild, node: Node) -> str:
    lines = [
        f"{p['title']}: {{{{ {input_expr(fb, node.key, p)} }}}}" for _, p in properties(node.comp, "inputs")
    ]
    return "\n".join(lines)


def _llm_node(fb: FlowBuild, node: Node) -> Doc:
    build, comp = fb.build, node.comp
    data: Doc = {
        "version": 1,
        "kind": "agent",
        "name": node.name,
        "prompt": LLM_PROMPT,
        "tools": [],
    }
    data["description"] = f"The LlmNode '{comp.name}' of the flow."
    model = build.models.ref(build.doc.child(comp, "llm_config"))
    if model is not None:
        data["model"] = model
    schema = _schema_of(fb, node.key)
    if schema is not None:
        data["output_schema"] = schema
    build.conv.add("agent", data, comp.src, comp.path, {("model",): ("llm_config",)})
    text = comp.get("prompt_template")
    task = template(text, _rendered(fb, node)) if isinstance(text, str) else _inputs_text(fb, node)
    build.conv.note(comp.src, comp.at("prompt_template"), f"the task of the step {node.name}")
    return {"agent": node.name, "task": task}


def _agent_node(fb: FlowBuild, node: Node) -> Doc | None:
    build, comp = fb.build, node.comp
    inner = build.doc.child(comp, "agent")
    name = agentic(build, inner) if inner is not None else None
    if name is None:
        return None
    if is_remote(build, name):
        name = relay(build, name)
    task = _inputs_text(fb, node) or "{{ message }}"
    if task == "{{ message }}":
        build.inputs.setdefault("message", {"description": "The user's message to the agent."})
    build.conv.note(
        comp.src, comp.path, f"a step of the agent {name}, its inputs in the task", "approximated"
    )
    return {"agent": name, "task": task}


def _tool_node(fb: FlowBuild, node: Node) -> Doc | None:
    build, comp = fb.build, node.comp
    tool = build.doc.child(comp, "tool")
    entries = tool_entry(build, tool) if tool is not None else []
    if not entries:
        return None
    tool_name = entries[0] if isinstance(entries[0], str) else next(iter(entries[0]))
    prompt = (
        f"Call the tool {tool_name} once, with the arguments you are given as they are, and answer "
        "with its result only."
    )
    data: Doc = {
        "version": 1,
        "kind": "agent",
        "name": node.name,
        "prompt": prompt,
        "tools": entries,
    }
    schema = _schema_of(fb, node.key)
    if schema is not None:
        data["output_schema"] = schema
    build.conv.add("agent", data, comp.src, comp.path)
    how = "an agent that calls the tool (flowrun has no step that runs a tool without a model)"
    build.conv.note(comp.src, comp.path, how, "approximated")
    args = {
        str(p["title"]): f"{{{{ ({input_expr(fb, node.key, p)}) | tojson }}}}"
        for _, p in properties(comp, "inputs")
    }
    task = "Arguments: {" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in args.items()) + "}"
    return {"agent": node.name, "task": task}


def _map_node(fb: FlowBuild, node: Node) -> Doc | None:
    build, comp = fb.build, node.comp
    sub = build.doc.child(comp, "subflow")
    lists = [(i, p) for i, p in properties(comp, "inputs") if str(p["title"]).startswith("iterated_")]
    if sub is None or len(lists) != 1:
        message = f"{comp.type} '{comp.name}': flowrun maps one `iterated_` list input over a subflow"
        build.conv.problem(comp.src, comp.path, message, "", "unsupported")
        return None
    item_name = str(lists[0][1]["title"]).removeprefix("iterated_")
    sources = fb.data.get((node.key, str(lists[0][1]["title"])), [])
    if len(sources) != 1 or fb.nodes[sources[0][0]].comp.type != "StartNode":
        build.conv.problem(
            comp.src,
            comp.path,
            f"{comp.type} '{comp.name}': flowrun maps over a list input of the flow",
            "",
            "unsupported",
        )
        return None
    inner = _single_step(build, sub, {item_name: "item"})
    if inner is None:
        return None
    build.inputs.setdefault(sources[0][1], {"description": sources[0][1]})["type"] = "list"
    concurrency = 4 if comp.type == "ParallelMapNode" else 1
    build.conv.note(comp.src, comp.path, f"a foreach over the input {sources[0][1]}, {concurrency} at a time")
    return {
        "foreach": {
            "input": sources[0][1],
            "as": "item",
            "concurrency": concurrency,
            "collect": fb.file(node.key).rsplit(".", 1)[0] + ".items.json",
            "step": inner,
        }
    }


def _single_step(build: Build, flow: Comp, item: dict[str, str]) -> Doc | None:
    """The one step of a subflow that has one node doing work."""
    sub = FlowBuild(build, flow, item=item)
    read_nodes(sub)
    workers = [n for n in sub.nodes.values() if n.comp.type not in PASSIVE]
    if not workers:  # it passes its inputs through: no step
        build.conv.note(flow.src, flow.path, f"the subflow '{flow.name}' does no work: no step")
        return None
    if len(workers) != 1:
        message = f"the subflow '{flow.name}' has {len(workers)} nodes that do work; flowrun runs one here"
        build.conv.problem(flow.src, flow.path, message, "", "unsupported")
        return None
    step = node_step(sub, workers[0])
    if step is not None and "agent" in step:
        step["output"] = (
            f"agentspec/{workers[0].name}/{{{{ index }}}}.txt" if item else sub.file(workers[0].key)
        )
    return step


def _parallel(fb: FlowBuild, node: Node) -> Doc | None:
    branches = []
    for _, sub in fb.build.doc.children(node.comp, "subflows"):
        step = _single_step(fb.build, sub, {})
        if step is not None:
            branches.append(step)
    fb.build.conv.note(node.comp.src, node.comp.path, "a parallel step of its subflows")
    return {"parallel": branches} if branches else None


def _input_message(fb: FlowBuild, node: Node) -> None:
    name = node.name
    fb.build.inputs.setdefault(
        name, {"description": f"The user's message the flow asks for at '{node.comp.name}'."}
    )
    fb.build.conv.note(node.comp.src, node.comp.path, f"the workflow input `{name}`", "approximated")


def node_step(fb: FlowBuild, node: Node) -> Doc | None:
    kind = node.comp.type
    makers = {
        "LlmNode": _llm_node,
        "AgentNode": _agent_node,
        "ToolNode": _tool_node,
        "MapNode": _map_node,
        "ParallelMapNode": _map_node,
        "ParallelFlowNode": _parallel,
    }
    if kind in makers:
        step = makers[kind](fb, node)
        if step is not None and "agent" in step and "output" not in step:
            step["output"] = fb.file(node.key)
        return step
    if kind == "InputMessageNode":
        _input_message(fb, node)
        return None
    if kind not in PASSIVE:
        message = f"{kind} '{node.comp.name}' is a node flowrun does not run"
        hint = "flowrun runs LlmNode, AgentNode, ToolNode, BranchingNode, MapNode, ParallelMapNode"
        hint += " and ParallelFlowNode"
        fb.build.conv.problem(node.comp.src, node.comp.at("component_type"), message, hint, "unsupported")
    return None


def flow_steps(fb: FlowBuild) -> list[Doc]:
    build = fb.build
    read_nodes(fb)
    start = fb.nodes.get(fb.start)
    if start is None:
        build.conv.problem(
            fb.flow.src, fb.flow.at("start_node"), "the Flow has no start_node", "", "missing-key"
        )
        return []
    add_inputs(build, start.comp, "outputs" if start.comp.get("outputs") else "inputs")
    branching = {k for k, n in fb.nodes.items() if n.comp.type == "BranchingNode"}
    plan = graph.plan(fb.start, control_edges(fb), branching)
    for edge, why in plan.problems:
        build.conv.problem(fb.flow.src, edge.where, why, "end the cycle with a BranchingNode", "unsupported")
    steps: list[Doc] = []
    in_loop = {k: loop for loop in plan.loops for k in loop.body}
    for key in plan.order:
        loop = in_loop.get(key)
        if loop is not None and key != loop.head:
            continue
        if loop is not None:
            steps.append(_loop(fb, loop, plan))
            continue
        step = node_step(fb, fb.nodes[key])
        if step is not None:
            cond = guard(fb, plan.guards.get(key, [[]]), set())
            steps.append({**step, "if": cond} if cond else step)
    return steps


def _loop(fb: FlowBuild, loop: graph.Loop, plan: graph.Plan) -> Doc:
    body = []
    inside = set(loop.body)
    for key in loop.body:
        step = node_step(fb, fb.nodes[key])
        if step is not None:
            cond = guard(fb, plan.guards.get(key, [[]]), inside)
            body.append({**step, "if": cond} if cond else step)
    comp = fb.nodes[loop.tail].comp
    fb.build.conv.note(
        comp.src,
        comp.path,
        f"a loop of {LOOP_LIMIT} iterations at most, while branch '{loop.branch}' is taken",
        "approximated",
    )
    until = f"not ({condition(fb, loop.tail, loop.branch)})"
    return {"loop": {"max_iterations": LOOP_LIMIT, "until": until, "steps": body}}
