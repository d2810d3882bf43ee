"""docker-agent toolsets as flowrun tool entries: `filesystem`, `shell`, `fetch` and `user_prompt`
as the built-ins that do the same job (builtin_tools.DOCKER_AGENT), `mcp` as an MCP server of the
workflow (a command, a remote URL, a `docker:` catalog name run through Docker's MCP gateway, or a
name from the file's `mcps:`), `script` as command tools, `a2a` as a remote A2A agent, `think` as
nothing (the model reasons in its answer); the rest, which flowrun has no tool for, as a warning
(the agent runs without them)."""

from __future__ import annotations

from collections.abc import Mapping

from flowrun.manifest.foreign import placeholders
from flowrun.manifest.foreign.builtin_tools import DOCKER_AGENT
from flowrun.manifest.foreign.conversion import Doc, Items, flowrun_name
from flowrun.manifest.foreign.docker_agent.build import Team, flowrun_agent
from flowrun.manifest.yaml_source import PathKey

MISSING = {
    "todo": "flowrun has no to-do list tool; the agent keeps its plan in its answers",
    "memory": "flowrun has no memory tool; the agent remembers nothing across runs",
    "tasks": "flowrun has no task list tool",
    "api": "flowrun has no HTTP API tool; declare a command tool in tools.d/",
    "openapi": "flowrun does not make tools from an OpenAPI document",
    "lsp": "flowrun has no language server tool",
    "model_picker": "the agent keeps its model",
    "background_agents": "sub-agents answer before the caller goes on",
}
# keys any toolset may carry that change how docker-agent shows the tools, not what they do
SHOWN = ("instruction", "toon", "name")


def toolset_entries(team: Team, agent: str, toolset: object, where: PathKey) -> Items:
    conv, src = team.conv, team.src
    if not isinstance(toolset, Mapping) or not isinstance(toolset.get("type"), str):
        conv.problem(src, where, "a toolset is {type: ...}", "", "wrong-type")
        return []
    kind = str(toolset["type"])
    for key in SHOWN:
        if key in toolset:
            conv.note(src, (*where, key), "not used: flowrun's tools describe themselves", "dropped")
    if kind == "think":
        conv.note(src, (*where, "type"), "no tool: the model reasons in its answer", "approximated")
        return []
    if kind in DOCKER_AGENT:
        eq = DOCKER_AGENT[kind]
        conv.note(src, (*where, "type"), ", ".join(eq.tools) + (f" ({eq.why})" if eq.why else ""), eq.how)
        if "tools" in toolset:
            conv.note(src, (*where, "tools"), "every tool of the set is given", "approximated")
        return list(eq.tools)
    if kind == "mcp":
        return _mcp(team, agent, toolset, where)
    if kind == "script":
        return _scripts(team, toolset, where)
    if kind == "a2a" and isinstance(toolset.get("url"), str):
        return _a2a(team, agent, toolset, where)
    why = MISSING.get(kind, "flowrun has no such toolset")
    conv.note(src, (*where, "type"), f"dropped: {why}", "dropped")
    message = f"{agent}: toolset '{kind}' is left out: {why}"
    hint = "the toolsets flowrun maps: docs/how-to/docker-agent.md#toolsets"
    conv.problem(src, (*where, "type"), message, hint, "ignored-tool", severity="warning")
    return []


def _mcp(team: Team, agent: str, toolset: Mapping[str, object], where: PathKey) -> Items:
    conv, src = team.conv, team.src
    ref = toolset.get("ref")
    spec: Mapping[str, object] = toolset
    name = flowrun_name(f"{flowrun_agent(agent)}-mcp{len(team.servers) + 1}")
    if isinstance(ref, str) and not ref.startswith("docker:"):
        named = team.mcps.get(ref)
        if not isinstance(named, Mapping):
            message = f"toolset ref '{ref}' names no MCP server of the file's `mcps:`"
            conv.problem(src, (*where, "ref"), message, "define it under `mcps:`", "unknown-mcp")
            return []
        spec, name = {**named, **{k: v for k, v in toolset.items() if k != "ref"}}, flowrun_name(ref)
    server, how = _server(spec)
    if server is None:
        message = "an mcp toolset needs `command`, `remote: {url}` or `ref: docker:NAME`"
        conv.problem(src, where, message, "", "missing-key")
        return []
    if isinstance(spec.get("ref"), str):
        name = flowrun_name(str(spec["ref"]).removeprefix("docker:"))
    if team.servers.get(name, server) != server:
        name = flowrun_name(f"{name}-{flowrun_agent(agent)}")
    team.servers[name] = server
    conv.note(src, where, f"MCP server {name}: {how}", "mapped" if "url" in server else "approximated")
    return [name]


def _a2a(team: Team, agent: str, toolset: Mapping[str, object], where: PathKey) -> Items:
    """A remote A2A agent (`url`, `headers`) as one of the workflow's `a2a_agents`."""
    raw = toolset.get("name")
    name = flowrun_name(
        str(raw) if isinstance(raw, str) else f"{flowrun_agent(agent)}-a2a{len(team.remote_agents) + 1}"
    )
    spec: Doc = {"url": toolset["url"]}
    headers = toolset.get("headers")
    if isinstance(headers, Mapping):
        spec["headers"] = {str(k): str(v) for k, v in headers.items()}
    team.remote_agents[name] = spec
    team.conv.note(team.src, where, f"remote A2A agent {name}, offered as a tool")
    return [name]


def braced(value: object) -> str:
    """docker-agent's `$VAR` and `${VAR}` (expanded from the environment) as flowrun's `${VAR}`,
    which an MCP server's command, args, env, url and headers take."""
    return placeholders.ENVIRONMENT.sub(lambda m: "${" + placeholders.name_of(m) + "}", str(value))


def _server(spec: Mapping[str, object]) -> tuple[Doc | None, str]:
    out: Doc | None = None
    how = ""
    remote, ref = spec.get("remote"), spec.get("ref")
    if isinstance(spec.get("command"), str):
        args = spec.get("args")
        out = {
            "command": braced(spec["command"]),
            "args": [braced(a) for a in args] if isinstance(args, list) else [],
        }
        how = "started as docker-agent starts it, in flowrun's sandbox with the network allowed"
        out["sandbox"] = {"network": "allow"}
    elif isinstance(remote, Mapping) and isinstance(remote.get("url"), str):
        transport = str(remote.get("transport_type", ""))
        out = {"type": "sse" if transport == "sse" else "http", "url": braced(remote["url"])}
        if isinstance(remote.get("headers"), Mapping):
            out["headers"] = {str(k): braced(v) for k, v in remote["headers"].items()}
        how = "its tools, from the remote server"
    elif isinstance(ref, str) and ref.startswith("docker:"):
        catalog = ref.removeprefix("docker:")
        out = {"command": "docker", "args": ["mcp", "gateway", "run", "--servers", catalog]}
        out["sandbox"] = "off"  # the gateway starts containers through the Docker daemon
        how = f"Docker's MCP gateway runs '{catalog}' from its catalog (needs Docker with the MCP Toolkit)"
    if out is None:
        return None, how
    env, tools = spec.get("env"), spec.get("tools")
    if isinstance(env, Mapping) and "command" in out:
        out["env"] = {str(k): braced(v) for k, v in env.items()}
    if isinstance(tools, list):
        out["tools"] = [str(t) for t in tools]
    if spec.get("defer") is True:
        out["defer"] = True
    return out, how


def _scripts(team: Team, toolset: Mapping[str, object], where: PathKey) -> Items:
    """`script` toolsets' `shell:` commands as command tools: `sh -c CMD`, each argument in the
    environment under its own name (docker-agent's `$name`)."""
    conv, src = team.conv, team.src
    shell = toolset.get("shell")
    if not isinstance(shell, Mapping) or not shell:
        conv.problem(src, where, "a script toolset needs `shell: {NAME: {cmd: ...}}`", "", "missing-key")
        return []
    out: Items = []
    for key, raw in shell.items():
        at = (*where, "shell", key)
        if not isinstance(raw, Mapping) or not isinstance(raw.get("cmd"), str):
            conv.problem(src, at, f"script tool '{key}' needs `cmd:`", "", "missing-key")
            continue
        manifest = _script_tool(str(key), raw)
        conv.add("tool", manifest, src, at)
        how = "a command tool run with sh in flowrun's sandbox (network allowed), its arguments as variables"
        conv.note(src, at, f"tool {manifest['name']}: {how}", "approximated")
        out.append(manifest["name"])
    return out


def _script_tool(key: str, raw: Mapping[str, object]) -> Doc:
    args = raw.get("args")
    properties = (
        {str(k): dict(v) for k, v in args.items() if isinstance(v, Mapping)}
        if isinstance(args, Mapping)
        else {}
    )
    parameters: Doc = {"type": "object", "properties": properties}
    required = raw.get("required")
    if isinstance(required, list):
        parameters["required"] = [str(r) for r in required if r in properties]
    fixed = raw.get("env")
    env = (
        {str(k): placeholders.literal(str(v)) for k, v in fixed.items()} if isinstance(fixed, Mapping) else {}
    )
    env |= {arg: f"{{{{ {arg} | default('') }}}}" for arg in properties if placeholders.IDENTIFIER.match(arg)}
    implementation: Doc = {
        "command": ["sh", "-c", placeholders.literal(str(raw["cmd"]))],
        "env": env,
    }
    if isinstance(raw.get("working_dir"), str):
        implementation["cwd"] = placeholders.literal(str(raw["working_dir"]))
    description = raw.get("description")
    return {
        "version": 1,
        "kind": "tool",
        "name": flowrun_name(key),
        "description": str(description)
        if isinstance(description, str) and description
        else f"Runs: {raw['cmd']}",
        "parameters": parameters,
        "implementation": implementation,
        "sandbox": {"network": "allow"},
    }
