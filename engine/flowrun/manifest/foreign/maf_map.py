"""A `kind: Prompt` agent read into a flowrun agent and its one-step workflow (single.py): the
model (`id`, `provider`, `options`, `connection`; `=Env.NAME` as `${NAME}`), MCP tools as MCP
servers, hosted tools as flowrun's built-ins (builtin_tools.MAF), and `outputSchema` as a JSON
Schema. A function tool is bound to the host's own code: an error naming it."""

from __future__ import annotations

import re
from collections.abc import Mapping

from flowrun.manifest.foreign import llm, placeholders
from flowrun.manifest.foreign.builtin_tools import MAF
from flowrun.manifest.foreign.conversion import Conversion, Doc, Items, agent_name, flowrun_name
from flowrun.manifest.foreign.keys import KeyTable, sort_keys
from flowrun.manifest.foreign.python_refs import refuse_tool
from flowrun.manifest.foreign.registry import Detected
from flowrun.manifest.foreign.single import OneAgent, add_one_agent, read_file
from flowrun.manifest.yaml_source import PathKey, Source

ENV = re.compile(r"^=\s*Env\.([A-Za-z_][A-Za-z0-9_]*)\s*$")
DEFAULT = {"provider": "openai", "model": "gpt-4o-mini"}  # the host's chat client, unnamed here
AZURE = {"base_url": "${AZURE_OPENAI_ENDPOINT}/openai/v1", "api_key_env": "AZURE_OPENAI_API_KEY"}
OPTIONS = {"temperature": "temperature", "maxOutputTokens": "max_tokens"}
OPTION_BODY = {
    "topP": "top_p",
    "topK": "top_k",
    "seed": "seed",
    "frequencyPenalty": "frequency_penalty",
    "presencePenalty": "presence_penalty",
}
JSON_TYPES = ("string", "number", "integer", "boolean", "array", "object")
PROMPT_KEYS = KeyTable(
    "a Microsoft Agent Framework prompt agent",
    used=("kind", "name", "description", "instructions", "model", "tools", "outputSchema"),
    cosmetic=("metadata", "id"),
    dropped={
        "inputSchema": "the agent takes the user's message as text",
        "template": "the instructions are sent as written",
    },
)


def env(value: object) -> str | None:
    """A value as flowrun text: `=Env.NAME` as `${NAME}`, plain text as it is; None for any
    other Power Fx expression."""
    if not isinstance(value, str):
        return None
    found = ENV.match(value)
    if found:
        return "${" + found.group(1) + "}"
    return None if value.startswith("=") else value


def convert_prompt(found: Detected) -> Conversion:
    conv, src, data = read_file(found, "an Agent Framework file")
    if src is None:
        return conv
    if data.get("kind") == "Workflow":
        message = (
            "an Agent Framework workflow (`kind: Workflow`): its actions invoke agents defined in "
            "Azure AI Foundry by name and branch on Power Fx, which flowrun does not read"
        )
        conv.problem(
            src,
            ("kind",),
            message,
            "write each agent as a `kind: Prompt` file and the steps as a flowrun workflow",
            "unsupported",
        )
        return conv
    sort_keys(conv, src, (), data, PROMPT_KEYS)
    raw = data.get("name")
    name = agent_name(str(raw) if isinstance(raw, str) and raw else found.entry.stem)
    one = OneAgent(name, "maf", {"version": 1, "kind": "agent", "name": name})
    instructions = data.get("instructions")
    one.agent["prompt"] = placeholders.literal(instructions.strip()) if isinstance(instructions, str) else ""
    conv.note(src, ("instructions",), f"agent {name}: its system prompt")
    if isinstance(data.get("description"), str):
        one.agent["description"] = data["description"]
    _model(conv, src, data.get("model"), one)
    tools = data.get("tools")
    one.agent["tools"] = [
        e
        for i, t in enumerate(tools if isinstance(tools, list) else [])
        for e in _tool(conv, src, ("tools", i), t, one)
    ]
    _output(conv, src, data.get("outputSchema"), one)
    one.where = {("prompt",): ("instructions",), ("model",): ("model",), ("tools",): ("tools",)}
    if not conv.errors:
        add_one_agent(conv, src, one)
    return conv


def _model(conv: Conversion, src: Source, raw: object, one: OneAgent) -> None:
    model = raw if isinstance(raw, Mapping) else {}
    model_id = env(model.get("id")) if "id" in model else None
    provider = str(model.get("provider", "OpenAI"))
    if "id" in model and model_id is None:
        conv.problem(
            src,
            ("model", "id"),
            "a Power Fx expression flowrun does not evaluate",
            "a model id or =Env.NAME",
            "unsupported",
        )
        return
    spec: Doc = dict(DEFAULT) if model_id is None else {"provider": "openai", "model": model_id}
    if model_id is not None:
        conv.note(src, ("model", "id"), f"model {model_id}")
    else:
        conv.note(
            src,
            ("model",) if model else (),
            f"model {DEFAULT['model']}: the file leaves the chat client to the host",
            "approximated",
        )
    if provider == "AzureOpenAI":
        spec |= {"provider": "openai-compatible", **AZURE}
        conv.note(
            src, ("model", "provider"), "Azure OpenAI's v1 API at ${AZURE_OPENAI_ENDPOINT}", "approximated"
        )
    elif provider != "OpenAI":
        pick = llm.litellm(f"{provider.lower()}/{model_id or ''}")
        if not pick.usable:
            conv.problem(
                src,
                ("model", "provider"),
                f"{one.name}: {pick.problem}",
                "OpenAI or AzureOpenAI",
                "unknown-model",
            )
            return
        spec = dict(pick.spec) if pick.spec else llm.spec_of(pick.ref or "")
    if model.get("apiType") not in (None, "Chat"):
        conv.note(src, ("model", "apiType"), "flowrun calls the Chat Completions API", "approximated")
    _connection(conv, src, model.get("connection"), spec)
    options = model.get("options")
    for key, value in (options if isinstance(options, Mapping) else {}).items():
        _option(conv, src, ("model", "options", key), str(key), value, spec)
    one.models[one.name] = spec
    one.agent["model"] = one.name


def _connection(conv: Conversion, src: Source, raw: object, spec: Doc) -> None:
    if not isinstance(raw, Mapping):
        return
    where: PathKey = ("model", "connection")
    key = env(raw.get("apiKey") or raw.get("key"))
    endpoint = env(raw.get("endpoint"))
    if key and key.startswith("${"):
        spec["api_key_env"] = key[2:-1]
        conv.note(src, where, f"the API key from ${spec['api_key_env']}")
    elif key:
        conv.problem(
            src,
            where,
            "an API key written in the file",
            "use =Env.NAME (flowrun reads keys from the environment)",
            "secret",
        )
    if endpoint and str(raw.get("kind", "")).lower() != "remote":
        spec |= {"provider": "openai-compatible", "base_url": endpoint}
    elif endpoint:
        conv.note(src, where, "the Foundry project is not used: the model is called directly", "approximated")
        conv.problem(
            src,
            where,
            "a Foundry project connection: flowrun calls the model through its own provider",
            "",
            "ignored-key",
            severity="warning",
        )


def _option(conv: Conversion, src: Source, where: PathKey, key: str, value: object, spec: Doc) -> None:
    if key in OPTIONS:
        spec[OPTIONS[key]] = value
        conv.note(src, where, f"the model's {OPTIONS[key]}")
    elif key in OPTION_BODY:
        spec.setdefault("extra_body", {})[OPTION_BODY[key]] = value
        conv.note(src, where, f"sent as `{OPTION_BODY[key]}` (extra_body)", "approximated")
    else:
        conv.note(src, where, "not used: the model decides how it calls tools", "dropped")


def _tool(conv: Conversion, src: Source, where: PathKey, raw: object, one: OneAgent) -> Items:
    tool = raw if isinstance(raw, Mapping) else {}
    kind, name = str(tool.get("kind", "")), str(tool.get("name", ""))
    if kind == "mcp" and isinstance(tool.get("url"), str):
        server = flowrun_name(name or f"{one.name}-mcp{len(one.servers) + 1}")
        one.servers[server] = {"type": "http", "url": env(tool["url"]) or tool["url"]}
        if isinstance(tool.get("allowedTools"), list):
            one.servers[server]["tools"] = [str(t) for t in tool["allowedTools"]]
        approval = tool.get("approvalMode")
        asks = isinstance(approval, Mapping) and approval.get("kind") not in (None, "never")
        conv.note(src, where, f"MCP server {server}" + (": a person approves each call" if asks else ""))
        return [{server: {"approve": "ask"}}] if asks else [server]
    if kind in MAF:
        eq = MAF[kind]
        conv.note(src, where, ", ".join(eq.tools) + (f" ({eq.why})" if eq.why else ""), eq.how)
        return list(eq.tools)
    if kind == "function":
        refuse_tool(
            conv,
            src,
            where,
            name or "function",
            flowrun_name(name or "function"),
            "a function tool is bound to the host's own code (`bindings`)",
        )
        return []
    conv.note(src, where, "dropped: flowrun has no equivalent", "dropped")
    conv.problem(
        src,
        where,
        f"{one.name}: tool kind '{kind}' has no flowrun equivalent; the agent runs without it",
        "",
        "ignored-tool",
        severity="warning",
    )
    return []


def _output(conv: Conversion, src: Source, raw: object, one: OneAgent) -> None:
    """`outputSchema: {properties: {field: {kind, required, description, enum}}}` as a JSON Schema."""
    if not isinstance(raw, Mapping):
        return
    properties = raw.get("properties")
    schema: Doc = {"type": "object", "properties": {}, "required": []}
    for key, spec in (properties if isinstance(properties, Mapping) else {}).items():
        schema["properties"][str(key)] = _property(spec)
        if isinstance(spec, Mapping) and spec.get("required") is True:
            schema["required"].append(str(key))
    one.agent["output_schema"] = schema
    conv.note(src, ("outputSchema",), "output_schema, its properties as JSON Schema")


def _property(spec: object) -> Doc:
    if not isinstance(spec, Mapping):
        return {}
    kind = str(spec.get("kind", "string")).lower()
    out: Doc = {"type": kind} if kind in JSON_TYPES else {}
    for key in ("description", "enum"):
        if key in spec:
            out[key] = spec[key]
    if kind == "array" and "items" in spec:
        out["items"] = _property(spec["items"])
    if kind == "object" and isinstance(spec.get("properties"), Mapping):
        out["properties"] = {str(k): _property(v) for k, v in spec["properties"].items()}
    return out
