"""The step of each Flow node that does work (see flows.py), and the Flow as a workflow."""

from __future__ import annotations

import json

from flowrun.manifest.foreign.agentspec import graph, parallel
from flowrun.manifest.foreign.agentspec.agents import agentic, is_remote, relay
from flowrun.manifest.foreign.agentspec.build import Build, add_inputs, json_schema, properties, template
from flowrun.manifest.foreign.agentspec.flows import (
    DIR,
    LOOP_LIMIT,
    PASSIVE,
    FlowBuild,
    Node,
    condition,
    control_edges,
    guard,
    input_expr,
    jinja_literal,
    read_nodes,
)
from flowrun.manifest.foreign.agentspec.tools import REMOTE, declared, remote_defaults, tool_entry
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
    """A ToolNode: an agent of the `direct` provider (no model) that calls the tool once with the
    node's inputs; its answer is the tool's result."""
    build, comp = fb.build, node.comp
    tool = build.doc.child(comp, "tool")
    entries = tool_entry(build, tool) if tool is not None else []
    if not entries:
        return None
    data: Doc = {
        "version": 1,
        "kind": "agent",
        "name": node.name,
        "description": f"The ToolNode '{comp.name}' of the flow.",
        "prompt": "Call the tool with the arguments you are given.",
        "model": build.models.direct(),
        "tools": entries,
    }
    schema = _schema_of(fb, node.key)
    if schema is not None:
        data["output_schema"] = schema
    build.conv.add("agent", data, comp.src, comp.path)
    build.conv.note(comp.src, comp.path, "a step that calls the tool once, without a model")
    return {"agent": node.name, "task": _arguments(fb, node)}


def _arguments(fb: FlowBuild, node: Node) -> str:
    """A node's inputs as the JSON object of a tool's arguments (a template)."""
    args = {
        str(p["title"]): f"{{{{ ({input_expr(fb, node.key, p)}) | tojson }}}}"
        for _, p in properties(node.comp, "inputs")
    }
    return "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in args.items()) + "}"


def _api_node(fb: FlowBuild, node: Node) -> Doc:
    """An ApiNode: its HTTP call as a tool, run by an agent of the `direct` provider (no model:
    it calls the tool with the node's inputs and answers with the outputs the call returned)."""
    build, comp = fb.build, node.comp
    defaults = remote_defaults(comp)
    tool = declared(build, comp, REMOTE, defaults, name=f"{node.name}_call")
    data: Doc = {
        "version": 1,
        "kind": "agent",
        "name": node.name,
        "description": f"The ApiNode '{comp.name}' of the flow: {comp.get('url')}.",
        "prompt": "Call the tool with the arguments you are given.",
        "model": build.models.direct(),
        "tools": [tool],
    }
    build.conv.add("agent", data, comp.src, comp.path)
    build.conv.note(comp.src, comp.path, f"a step that sends the HTTP request (tool {tool}), without a model")
    return {"agent": node.name, "task": _arguments(fb, node)}


def _echo(build: Build, name: str, task: str, output: str, what: str) -> Doc:
    """A step of the `direct` provider (no model) that writes its task, rendered, to `output`."""
    data: Doc = {"version": 1, "kind": "agent", "name": name, "description": what}
    data |= {"prompt": "Answer with what you are given.", "model": build.models.direct(), "tools": []}
    build.conv.add("agent", data, build.doc.root.src, build.doc.root.path)
    return {"agent": name, "task": task, "output": output}


def _json_task(values: dict[str, str]) -> str:
    return "{" + ", ".join(f"{json.dumps(k)}: {{{{ ({v}) | tojson }}}}" for k, v in values.items()) + "}"


def _items_task(lists: dict[str, str]) -> str:
    """A template of the JSON array of a map's items: one object per index of its lists (a value
    that is not a list is the same in every item)."""
    sets = "".join(f"{{% set v{i} = ({e}) %}}" for i, e in enumerate(lists.values()))
    is_list = "(v{0} is sequence and v{0} is not string and v{0} is not mapping)"
    sizes = ", ".join(f"((v{i} | length) if {is_list.format(i)} else 0)" for i in range(len(lists)))
    fields = ", ".join(
        f"{json.dumps(k)}: {{{{ (v{i}[k] if {is_list.format(i)} else v{i}) | tojson }}}}"
        for i, k in enumerate(lists)
    )
    return (
        sets
        + f"[{{% for k in range([{sizes}] | max) %}}{{% if k %}}, {{% endif %}}{{{fields}}}{{% endfor %}}]"
    )


def _map_node(fb: FlowBuild, node: Node) -> list[Doc]:
    """A MapNode: a step that writes its items (its `iterated_` inputs, zipped), a foreach of its
    subflow's one working node over them, and a step that writes its `collected_` outputs."""
    build, comp = fb.build, node.comp
    sub_comp = build.doc.child(comp, "subflow")
    props = [p for _, p in properties(comp, "inputs") if str(p["title"]).startswith("iterated_")]
    lists = {str(p["title"]).removeprefix("iterated_"): input_expr(fb, node.key, p) for p in props}
    if sub_comp is None or not lists:
        build.conv.note(comp.src, comp.path, f"{comp.type} '{comp.name}': nothing to map over, no step")
        return []
    items = f"{DIR}/{node.name}.items.json"
    steps = [_echo(build, build.unique(f"{node.name}_items"), _items_task(lists), items, "A map's items.")]
    sub = FlowBuild(build, sub_comp, item={k: f"item[{k!r}]" for k in lists})
    read_nodes(sub)
    workers = [n for n in sub.nodes.values() if n.comp.type not in PASSIVE]
    if len(workers) > 1:
        message = f"the subflow '{sub_comp.name}' has {len(workers)} nodes that do work; flowrun maps one"
        build.conv.problem(sub_comp.src, sub_comp.path, message, "", "unsupported")
        return []
    collect = f"{DIR}/{node.name}.collected.json"
    step = node_step(sub, workers[0]) if workers else None
    if step is not None and "agent" in step:
        step["output"] = (
            f"{DIR}/{workers[0].name}/{{{{ index }}}}.{sub.file(workers[0].key).rsplit('.', 1)[1]}"
        )
        concurrency = 4 if comp.type == "ParallelMapNode" else 1
        body = {"file": items, "as": "item", "concurrency": concurrency, "collect": collect, "step": step}
        steps.append({"foreach": body})
    values = {
        str(p["title"]): _collected(sub, str(p["title"]), items, collect) for _, p in fb.outputs(node.key)
    }
    build.conv.note(comp.src, comp.path, "a foreach over its items, then a step that collects its outputs")
    return [*steps, _echo(build, node.name, _json_task(values), fb.file(node.key), "A map's outputs.")]


def _collected(sub: FlowBuild, title: str, items: str, collect: str) -> str:
    """The expression of a map's output `collected_Y`: the list of what the subflow's EndNode
    received as Y, item by item."""
    name = title.removeprefix("collected_")
    ends = [k for k, n in sub.nodes.items() if n.comp.type == "EndNode"]
    sources = next((sub.data[(e, name)] for e in ends if (e, name) in sub.data), [])
    if not sources:  # no data edges: an output of that name
        sources = [(k, name) for k in sub.nodes if any(p["title"] == name for _, p in sub.outputs(k))]
    if not sources:
        return "[]"
    key, output = sources[-1]
    if sub.nodes[key].comp.type == "StartNode":
        return f"workspace.json({items!r}) | map(attribute={output!r}) | list"
    if sub.is_text(key):
        return f"workspace.json({collect!r}) | map(attribute='text') | list"
    return f"workspace.json({collect!r}) | map(attribute='data') | map(attribute={output!r}) | list"


def _single_step(sub: FlowBuild) -> Doc | None:
    """The one step of a subflow that has one node doing work (None: it passes its inputs
    through), its answer in the subflow's file of that node."""
    build, flow = sub.build, sub.flow
    read_nodes(sub)
    workers = [n for n in sub.nodes.values() if n.comp.type not in PASSIVE]
    if not workers:
        build.conv.note(flow.src, flow.path, f"the subflow '{flow.name}' does no work: no step")
        return None
    if len(workers) != 1:
        message = f"the subflow '{flow.name}' has {len(workers)} nodes that do work; flowrun runs one here"
        build.conv.problem(flow.src, flow.path, message, "", "unsupported")
        return None
    step = node_step(sub, workers[0])
    if step is not None and "agent" in step:
        step["output"] = sub.file(workers[0].key)
    return step


def _parallel(fb: FlowBuild, node: Node) -> list[Doc]:
    """A ParallelFlowNode: a `parallel:` step of its subflows' working nodes (each subflow's
    inputs read the node's), then a step that writes their EndNodes' inputs as its outputs."""
    build, comp = fb.build, node.comp
    flows = [sub for _, sub in build.doc.children(comp, "subflows")]
    if not parallel.check(build, comp, flows):
        return []
    props = [p for _, p in properties(comp, "inputs")] or [
        p for flow in flows for p in parallel.subflow_io(build, flow, "inputs")
    ]
    item = {str(p["title"]): input_expr(fb, node.key, p) for p in props}
    subs = [FlowBuild(build, flow, item=item) for flow in flows]
    branches = [step for sub in subs if (step := _single_step(sub)) is not None]
    values = {str(p["title"]): _end_value(subs, p) for _, p in fb.outputs(node.key)}
    how = "a parallel step of its subflows, then a step that keeps their outputs"
    build.conv.note(comp.src, comp.path, how)
    steps: list[Doc] = [{"parallel": branches}] if branches else []
    if values:
        what = f"The outputs of the ParallelFlowNode '{comp.name}'."
        task = _outputs_task(values, fb.is_text(node.key))
        steps.append(_echo(build, node.name, task, fb.file(node.key), what))
    return steps


def _end_value(subs: list[FlowBuild], prop: Doc) -> str:
    """The expression of what the first EndNode (of the first of `subs` that has one) with an
    input named like `prop` receives; else `prop`'s default."""
    for sub in subs:
        for key, end in sub.nodes.items():
            same = [p for _, p in properties(end.comp, "inputs") if p["title"] == prop["title"]]
            if end.comp.type == "EndNode" and same:
                return input_expr(sub, key, same[0])
    return jinja_literal(prop.get("default"))


def _outputs_task(values: dict[str, str], text: bool) -> str:
    """The template of an outputs file: the one text, or the JSON object of them."""
    if text:
        return "".join(f"{{{{ {v} }}}}" for v in values.values())
    return _json_task(values)


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
        "ApiNode": _api_node,
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
        hint = "flowrun runs LlmNode, AgentNode, ToolNode, ApiNode, BranchingNode, MapNode, ParallelMapNode"
        hint += " and ParallelFlowNode"
        fb.build.conv.problem(node.comp.src, node.comp.at("component_type"), message, hint, "unsupported")
    return None


def _flow_node(fb: FlowBuild, node: Node) -> list[Doc]:
    """A FlowNode: its subflow's steps in place (its StartNode's outputs read the node's inputs),
    its EndNodes writing the node's outputs."""
    build, comp = fb.build, node.comp
    flow = build.doc.child(comp, "subflow")
    if flow is None:
        build.conv.problem(comp.src, comp.at("subflow"), "the FlowNode has no subflow", "", "missing-key")
        return []
    item = {str(p["title"]): input_expr(fb, node.key, p) for _, p in properties(comp, "inputs")}
    props = [p for _, p in fb.outputs(node.key)]
    sub = FlowBuild(build, flow, item=item, end=fb.file(node.key), end_props=props)
    build.conv.note(
        comp.src, comp.path, f"the steps of the subflow '{flow.name}', its EndNodes writing its outputs"
    )
    return flow_steps(sub)


def _end_node(fb: FlowBuild, node: Node) -> list[Doc]:
    """An EndNode: a step without a model that writes the flow's outputs as it receives them
    (an output it has no input for: that output's default)."""
    if not fb.end:
        return []
    own = {str(p["title"]): p for _, p in properties(node.comp, "inputs")}
    values = {}
    for prop in fb.end_props:
        title = str(prop["title"])
        values[title] = (
            input_expr(fb, node.key, own[title]) if title in own else jinja_literal(prop.get("default"))
        )
    task = _outputs_task(values, fb.end.endswith(".txt"))
    what = f"What the EndNode '{node.comp.name}' receives: the outputs of the flow '{fb.flow.name}'."
    return [_echo(fb.build, fb.build.unique(node.name), task, fb.end, what)]


def node_steps(fb: FlowBuild, node: Node) -> list[Doc]:
    """The steps of a node: a FlowNode's several, another node's one or none."""
    if node.comp.type == "FlowNode":
        return _flow_node(fb, node)
    if node.comp.type in ("MapNode", "ParallelMapNode"):
        return _map_node(fb, node)
    if node.comp.type == "ParallelFlowNode":
        return _parallel(fb, node)
    if node.comp.type == "EndNode":
        return _end_node(fb, node)
    step = node_step(fb, node)
    return [] if step is None else [step]


def flow_steps(fb: FlowBuild) -> list[Doc]:
    build = fb.build
    read_nodes(fb)
    start = fb.nodes.get(fb.start)
    if start is None:
        build.conv.problem(
            fb.flow.src, fb.flow.at("start_node"), "the Flow has no start_node", "", "missing-key"
        )
        return []
    if not fb.item:  # a subflow's inputs are what its node is given
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
        cond = guard(fb, plan.guards.get(key, [[]]), set())
        steps += [{**step, "if": cond} if cond else step for step in node_steps(fb, fb.nodes[key])]
    return steps


def _loop(fb: FlowBuild, loop: graph.Loop, plan: graph.Plan) -> Doc:
    body = []
    inside = set(loop.body)
    for key in loop.body:
        cond = guard(fb, plan.guards.get(key, [[]]), inside)
        body += [{**step, "if": cond} if cond else step for step in node_steps(fb, fb.nodes[key])]
    comp = fb.nodes[loop.tail].comp
    fb.build.conv.note(
        comp.src,
        comp.path,
        f"a loop of {LOOP_LIMIT} iterations at most, while branch '{loop.branch}' is taken",
        "approximated",
    )
    until = f"not ({condition(fb, loop.tail, loop.branch)})"
    return {"loop": {"max_iterations": LOOP_LIMIT, "until": until, "steps": body}}
