"""ADK LlmAgents as flowrun agents (their prompt and model: build.py) with their tools: ADK's
built-ins as flowrun's (builtin_tools.ADK), `AgentTool` and the `sub_agents` an LlmAgent transfers
to as agents offered as tools, `MCPToolset` as an MCP server of the workflow, a Python function
as a function tool (python_refs.py), `exit_loop` as flowrun's exit_loop for the enclosing loop."""

from __future__ import annotations

from collections.abc import Mapping

from flowrun.manifest.foreign.adk.build import AGENT_KEYS, Build, Draft, model_of, output_path, prompt_of
from flowrun.manifest.foreign.adk.tree import LLM, Node
from flowrun.manifest.foreign.builtin_tools import ADK
from flowrun.manifest.foreign.conversion import Doc, Items, flowrun_name
from flowrun.manifest.foreign.keys import sort_keys
from flowrun.manifest.foreign.python_refs import function_tool, refuse_tool
from flowrun.manifest.yaml_source import PathKey


def llm_agent(build: Build, node: Node) -> Draft | None:
    """The flowrun agent of an LlmAgent, once (an agent both a sub-agent and a tool is one)."""
    if node.name in build.agents:
        return build.agents[node.name]
    conv, src = build.conv, node.src
    sort_keys(conv, src, (), node.data, AGENT_KEYS)
    text = node.value("instruction")
    if not isinstance(text, str):
        conv.problem(
            src,
            (),
            f"LlmAgent '{node.name}' has no `instruction`",
            "add `instruction:` (ADK needs it)",
            "missing-key",
        )
        text = ""
    prompt = prompt_of(build, node, text)
    data: Doc = {"version": 1, "kind": "agent", "name": node.name, "prompt": prompt}
    description = node.value("description")
    if isinstance(description, str) and description.strip():
        data["description"] = description.strip()
    draft = Draft(data, src, {("prompt",): ("instruction",), ("model",): ("model",), ("tools",): ("tools",)})
    build.agents[node.name] = draft
    conv.note(
        src,
        ("instruction",),
        f"agent {node.name}: its system prompt, state placeholders filled in as ADK does",
    )
    model = model_of(build, node)
    if model is not None:
        data["model"] = model
    data["tools"] = agent_tools(build, node, draft)
    return draft


def agent_tools(build: Build, node: Node, draft: Draft) -> Items:
    """An LlmAgent's tool entries: its `tools`, then the sub-agents it transfers to."""
    tools = node.value("tools")
    if tools is not None and not isinstance(tools, list):
        build.conv.problem(node.src, ("tools",), "`tools` must be a list of {name: ...}", "", "wrong-type")
        tools = []
    out: Items = []
    for i, tool in enumerate(tools or []):
        for entry in tool_entries(build, node, tool, ("tools", i)):
            draft.where[("tools", len(out))] = ("tools", i)
            out.append(entry)
    for i, child in enumerate(node.children):
        where = ("sub_agents", i)
        if child.cls != LLM:
            message = (
                f"{child.cls} '{child.name}' under LlmAgent '{node.name}': "
                "flowrun offers agents as tools, not pipelines"
            )
            hint = "make the pipeline the root (a SequentialAgent), or its parent a SequentialAgent"
            build.conv.problem(node.src, where, message, hint, "unsupported")
            continue
        llm_agent(build, child)
        draft.where[("tools", len(out))] = where
        out.append(child.name)
        became = (
            f"agent {child.name} offered as a tool (ADK transfers the conversation; here it answers back)"
        )
        build.conv.note(node.src, where, became, "approximated")
    return out


def tool_entries(build: Build, node: Node, tool: object, where: PathKey) -> Items:
    conv, src = build.conv, node.src
    if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
        conv.problem(src, where, "a tool is {name: ..., args: ...}", "", "wrong-type")
        return []
    name, args = str(tool["name"]), tool.get("args")
    if name == "exit_loop":
        return _exit_loop(build, node, where)
    if name in ADK:
        eq = ADK[name]
        conv.note(src, (*where, "name"), ", ".join(eq.tools) + (f" ({eq.why})" if eq.why else ""), eq.how)
        return list(eq.tools)
    if name == "AgentTool":
        return _agent_tool(build, node, args, where)
    if name in ("MCPToolset", "McpToolset"):
        return _mcp_toolset(build, node, args, where)
    if name in ("LongRunningFunctionTool", "FunctionTool"):
        func = args.get("func") if isinstance(args, Mapping) else None
        if not isinstance(func, str):
            conv.problem(
                src,
                (*where, "args"),
                f"{name} needs `args: {{func: package.module.function}}`",
                "",
                "missing-key",
            )
            return []
        return _function(
            build, node, func, (*where, "args", "func"), approve=name == "LongRunningFunctionTool"
        )
    if "." in name:
        if args is not None:
            refuse_tool(
                conv,
                src,
                where,
                name,
                flowrun_name(name.rsplit(".", 1)[-1]),
                "a tool made by calling Python with `args`",
            )
            return []
        return _function(build, node, name, (*where, "name"), approve=False)
    conv.note(src, (*where, "name"), "dropped: flowrun has no equivalent", "dropped")
    message = f"{node.name}: ADK tool '{name}' has no flowrun equivalent; the agent runs without it"
    conv.problem(
        src,
        (*where, "name"),
        message,
        "the tools flowrun maps: docs/how-to/adk.md#tools",
        "ignored-tool",
        severity="warning",
    )
    return []


def _exit_loop(build: Build, node: Node, where: PathKey) -> Items:
    marker = build.loops.get(node.name)
    if marker is None:
        build.conv.note(node.src, where, "dropped: the agent runs in no LoopAgent", "dropped")
        message = f"{node.name}: exit_loop outside a LoopAgent ends nothing; it is left out"
        build.conv.problem(node.src, where, message, "", "ignored-tool", severity="warning")
        return []
    build.conv.note(
        node.src, where, f"exit_loop: the loop's `until` sees {marker} and its later steps are skipped"
    )
    return [{"exit_loop": {"marker": marker, "keep": output_path(node)}}]


def _agent_tool(build: Build, node: Node, args: object, where: PathKey) -> Items:
    agent = args.get("agent") if isinstance(args, Mapping) else None
    if agent is None:
        build.conv.problem(
            node.src,
            (*where, "args"),
            "AgentTool needs `args: {agent: {config_path: FILE}}`",
            "",
            "missing-key",
        )
        return []
    child = build.tree.ref(agent, node.src, (*where, "args", "agent"), node.src.path.parent)
    if child is None:
        return []
    if child.cls != LLM:
        build.conv.problem(
            node.src,
            (*where, "args", "agent"),
            f"AgentTool of a {child.cls}: flowrun offers agents as tools, not pipelines",
            "",
            "unsupported",
        )
        return []
    llm_agent(build, child)
    build.conv.note(node.src, where, f"agent {child.name} offered as a tool")
    if isinstance(args, Mapping) and "skip_summarization" in args:
        build.conv.note(
            node.src,
            (*where, "args", "skip_summarization"),
            "the caller always reads the agent's answer",
            "approximated",
        )
    return [child.name]


def _function(build: Build, node: Node, dotted: str, where: PathKey, approve: bool) -> Items:
    found = function_tool(build.conv, node.src, where, dotted, build.conv.root)
    if found is None:
        return []
    name = str(found.manifest["name"])
    build.conv.add("tool", found.manifest, node.src, where)
    if approve:
        build.conv.note(
            node.src,
            where,
            f"tool {name}: a person approves each call (ADK's long-running tool waits for one)",
            "approximated",
        )
        return [{name: {"approve": "ask"}}]
    return [name]


def _mcp_toolset(build: Build, node: Node, args: object, where: PathKey) -> Items:
    server = mcp_server(args)
    if server is None:
        message = "MCPToolset needs stdio_server_params {command, args} or connection params with a url"
        build.conv.problem(node.src, (*where, "args"), message, "", "missing-key")
        return []
    name = flowrun_name(f"{node.name}-mcp{len(build.servers) + 1}")
    build.servers[name] = server
    how = (
        "its tools, from the MCP server (run in the sandbox with the network allowed)"
        if "command" in server
        else "its tools, from the MCP server"
    )
    build.conv.note(
        node.src, where, f"MCP server {name}: {how}", "approximated" if "command" in server else "mapped"
    )
    return [name]


def mcp_server(args: object) -> Doc | None:
    """An MCP server declaration from MCPToolset's args (stdio or HTTP/SSE connection params)."""
    if not isinstance(args, Mapping):
        return None
    out: Doc | None = None
    params = (
        args.get("stdio_server_params")
        or args.get("stdio_connection_params")
        or args.get("connection_params")
    )
    if isinstance(params, Mapping) and isinstance(params.get("server_params"), Mapping):
        params = params["server_params"]
    if isinstance(params, Mapping) and isinstance(params.get("command"), str):
        out = {"command": params["command"], "args": [str(a) for a in params.get("args") or []]}
        if isinstance(params.get("env"), Mapping):
            out["env"] = {str(k): str(v) for k, v in params["env"].items()}
        out["sandbox"] = {"network": "allow"}  # ADK starts it unconfined; the servers reach their APIs
    for key, kind in (("streamable_http_connection_params", "http"), ("sse_connection_params", "sse")):
        remote = args.get(key)
        if isinstance(remote, Mapping) and isinstance(remote.get("url"), str):
            out = {"type": kind, "url": remote["url"]}
            if isinstance(remote.get("headers"), Mapping):
                out["headers"] = {str(k): str(v) for k, v in remote["headers"].items()}
    allowed = args.get("tool_filter")
    if out is not None and isinstance(allowed, list):
        out["tools"] = [str(t) for t in allowed]
    return out
