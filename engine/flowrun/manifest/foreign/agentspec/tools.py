"""Agent Spec tools as flowrun tools. A `ServerTool` is run by the hosting runtime, so the file
has only its signature: flowrun runs the tool of that name it has (a built-in, a `tools.d/`
manifest next to the file, or the manifest `flowrun export` kept in its metadata), else it is an
error naming the manifest to write. A `ClientTool` is run by the caller: a decision the run waits
for, whose answer is the result. A `RemoteTool` is an HTTP request; `MCPTool` and `MCPToolBox`
an MCP server's tools. `requires_confirmation` makes each call wait for a person's approval."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from flowrun.manifest.foreign.agentspec.build import Build, is_text, json_schema, properties
from flowrun.manifest.foreign.agentspec.document import Comp, flowrun_meta
from flowrun.manifest.foreign.conversion import Doc, Items, flowrun_name
from flowrun.paths import search_roots

REMOTE: dict[str, str] = {"python": "flowrun.tools.agentspec_calls:remote_tool"}
REMOTE_KEYS = ("url", "http_method", "headers", "data", "query_params")
TRANSPORTS = {"SSETransport": "sse", "StreamableHTTPTransport": "http", "SSEmTLSTransport": "sse"}
TRANSPORTS["StreamableHTTPmTLSTransport"] = "http"


def tool_entries(build: Build, owner: Comp, key: str = "tools") -> Items:
    """The `tools:` entries of an agent for the tools listed at `owner.key`."""
    out: Items = []
    for _, comp in build.doc.children(owner, key):
        out += tool_entry(build, comp)
    return out


def tool_entry(build: Build, comp: Comp) -> Items:
    kind = comp.type
    if kind in ("MCPTool", "MCPToolBox"):
        return _mcp(build, comp)
    if kind == "ServerTool" or kind == "BuiltinTool":
        name = _server_tool(build, comp)
    elif kind == "ClientTool":
        name = declared(build, comp, {"python": "flowrun.tools.agentspec_calls:client_tool"}, {})
        build.conv.note(comp.src, comp.path, f"tool {name}: the person running the workflow gives its result")
    elif kind == "RemoteTool":
        name = declared(build, comp, REMOTE, remote_defaults(comp))
        build.conv.note(comp.src, comp.path, f"tool {name}: an HTTP request to {comp.get('url')}")
    else:
        message = f"{kind} '{comp.name}' is not a tool flowrun can run"
        build.conv.problem(comp.src, comp.at("component_type"), message, "", "unsupported")
        return []
    if name is None:
        return []
    if comp.get("requires_confirmation") is True:
        build.conv.note(comp.src, comp.at("requires_confirmation"), f"tool {name}: `approve: ask`")
        return [{name: {"approve": "ask"}}]
    return [name]


def _server_tool(build: Build, comp: Comp) -> str | None:
    kept = flowrun_meta(comp).get("tool")
    if isinstance(kept, Mapping) and isinstance(kept.get("name"), str):
        name = str(kept["name"])
        build.tools[name] = dict(kept)
        build.conv.add("tool", dict(kept), comp.src, comp.path)
        build.conv.note(comp.src, comp.path, f"tool {name}: the flowrun tool kept in its metadata")
        return name
    name = flowrun_name(comp.name)
    if any((root / "tools.d" / f"{name}.yaml").is_file() for root in search_roots(build.conv.root)):
        build.conv.note(comp.src, comp.path, f"tool {name}: the flowrun tool of that name")
        return name
    message = f"ServerTool '{comp.name}' is run by the hosting runtime, and flowrun has no tool of that name"
    hint = f"declare it in tools.d/{name}.yaml next to this file (a python or command tool)"
    build.conv.note(comp.src, comp.path, "refused: no implementation", "dropped")
    build.conv.problem(comp.src, comp.at("name"), message, hint, "missing-tool")
    return None


def remote_defaults(comp: Comp) -> Doc:
    """What an HTTP call of `comp` (a RemoteTool, an ApiNode) sends, as its tool's config, and
    the outputs its answer is read as (those `comp` lists: each the answer's key of that name,
    see tools/agentspec_calls.py). The host its `url` names is allowed even when private (the
    file's author chose it; an argument cannot change it); a host filled in from an argument
    is checked by the network guard."""
    defaults: Doc = {k: comp.get(k) for k in REMOTE_KEYS if comp.get(k) is not None}
    url = comp.get("url")
    netloc = url.split("//", 1)[-1].split("/")[0] if isinstance(url, str) else "{{"
    host = None if "{{" in netloc else urlsplit(str(url)).hostname
    if host:
        defaults["allow_hosts"] = [host]
    props = [p for _, p in properties(comp, "outputs")]
    if props:
        defaults["outputs"] = [str(p["title"]) for p in props]
        defaults["text_output"] = is_text(props)
    return defaults


def declared(
    build: Build, comp: Comp, implementation: dict[str, str], defaults: Doc, name: str | None = None
) -> str:
    """A tool manifest made for `comp` (once per component), named after it unless `name`."""
    name = name or flowrun_name(comp.name)
    if name in build.tools:
        return name
    description = comp.get("description")
    data: Doc = {
        "version": 1,
        "kind": "tool",
        "name": name,
        "description": description if isinstance(description, str) and description.strip() else comp.name,
        "parameters": json_schema(properties(comp, "inputs")),
        "implementation": implementation,
        "replay": "recorded",
        "idempotent": False,
    }
    if defaults:
        data["defaults"] = defaults
        data["config"] = {"type": "object"}
    build.tools[name] = data
    build.conv.add("tool", data, comp.src, comp.path)
    return name


def _mcp(build: Build, comp: Comp) -> Items:
    transport = build.doc.child(comp, "client_transport")
    if comp.type == "MCPToolBox" and transport is None:
        server_comp = build.doc.child(comp, "mcp_client")
        transport = build.doc.child(server_comp, "client_transport") if server_comp else None
    server = mcp_server(transport)
    if server is None:
        message = f"{comp.type} '{comp.name}' needs a client_transport (SSE, streamable HTTP or stdio)"
        build.conv.problem(comp.src, comp.at("client_transport"), message, "", "missing-key")
        return []
    name = flowrun_name(transport.name if transport is not None else comp.name)
    known = build.servers.get(name)
    if known is not None and known.get("url") != server.get("url"):
        name = flowrun_name(f"{name}_{len(build.servers) + 1}")
    build.servers.setdefault(name, server)
    if comp.type == "MCPTool":
        build.conv.note(comp.src, comp.path, f"the tool {comp.name} of the MCP server {name}")
        entry = f"{name}.{comp.name}"
        return [{entry: {"approve": "ask"}}] if comp.get("requires_confirmation") is True else [entry]
    build.conv.note(comp.src, comp.path, f"the tools of the MCP server {name}")
    return [name]


def mcp_server(transport: Comp | None) -> Doc | None:
    if transport is None:
        return None
    if transport.type == "StdioTransport" and isinstance(transport.get("command"), str):
        out: Doc = {"command": transport.get("command")}
        out["args"] = [str(a) for a in transport.get("args") or []]
        if isinstance(transport.get("env"), Mapping):
            out["env"] = {str(k): str(v) for k, v in transport.get("env").items()}
        return out
    url = transport.get("url")
    if transport.type in TRANSPORTS and isinstance(url, str):
        out = {"type": TRANSPORTS[transport.type], "url": url}
        if isinstance(transport.get("headers"), Mapping):
            out["headers"] = {str(k): str(v) for k, v in transport.get("headers").items()}
        return out
    return None
