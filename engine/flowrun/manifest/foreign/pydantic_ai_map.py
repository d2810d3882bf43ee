"""An AgentSpec file read into a flowrun agent and its one-step workflow (single.py)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from flowrun.manifest.foreign import llm, placeholders
from flowrun.manifest.foreign.builtin_tools import PYDANTIC_AI
from flowrun.manifest.foreign.conversion import Conversion, Doc, Items, agent_name
from flowrun.manifest.foreign.keys import KeyTable, sort_keys, text
from flowrun.manifest.foreign.registry import Detected
from flowrun.manifest.foreign.single import OneAgent, add_one_agent, read_file
from flowrun.manifest.yaml_source import PathKey, Source

HANDLEBARS = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
PROVIDERS = {  # pydantic-ai's provider prefixes that differ from LiteLLM's
    "google-gla": "gemini",
    "google-vertex": "gemini",
    "openai-chat": "openai",
    "openai-responses": "openai",
    "grok": "xai",
}
SETTINGS = {"max_tokens": "max_tokens", "temperature": "temperature", "timeout": "timeout_s"}
EXTRA_BODY = ("top_p", "seed", "presence_penalty", "frequency_penalty")
JSON_TYPES = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean"}
DROPPED = {
    "end_strategy": "the agent stops at its first final answer (pydantic-ai's `early`)",
    "tool_timeout": "each tool keeps flowrun's own timeout",
}
COSMETIC = ("instrument", "metadata", "$schema")


def spec_keys(fields: tuple[str, ...]) -> KeyTable:
    """What flowrun does with each AgentSpec field (`fields`: all of them, as detection knows them)."""
    used = tuple(k for k in fields if k not in DROPPED and k not in COSMETIC)
    return KeyTable("a pydantic-ai AgentSpec", used=used, cosmetic=COSMETIC, dropped=DROPPED)


def convert_spec(found: Detected, fields: tuple[str, ...]) -> Conversion:
    conv, src, data = read_file(found, "a pydantic-ai AgentSpec")
    if src is None:
        return conv
    sort_keys(conv, src, (), data, spec_keys(fields))
    raw_name = data.get("name")
    name = agent_name(str(raw_name) if isinstance(raw_name, str) and raw_name else found.entry.stem)
    one = OneAgent(name, "pydantic-ai", {"version": 1, "kind": "agent", "name": name})
    one.tools_key = ("capabilities",)
    _inputs(conv, src, data, one)
    one.agent["prompt"] = _instructions(conv, src, data, one)
    if isinstance(data.get("description"), str):
        one.agent["description"] = data["description"]
    _model(conv, src, data, one)
    one.agent["tools"] = _capabilities(conv, src, data.get("capabilities"), one)
    _output(conv, src, data, one)
    one.where = {("prompt",): ("instructions",), ("model",): ("model",), ("tools",): ("capabilities",)}
    if not conv.errors:
        add_one_agent(conv, src, one)
    return conv


def _inputs(conv: Conversion, src: Source, data: Mapping[str, object], one: OneAgent) -> None:
    """`deps_schema`'s properties as inputs (the deps the instructions' `{{var}}`s read)."""
    schema = data.get("deps_schema")
    if not isinstance(schema, Mapping):
        return
    properties = schema.get("properties")
    required = schema.get("required")
    for key, spec in (properties if isinstance(properties, Mapping) else {}).items():
        kind = spec.get("type") if isinstance(spec, Mapping) else None
        one.inputs[str(key)] = {
            "description": f"The dep `{key}` the instructions read.",
            "type": JSON_TYPES.get(str(kind), "string"),
        }
        if not (isinstance(required, list) and key in required):
            one.inputs[str(key)] |= {"required": False, "default": ""}
    conv.note(src, ("deps_schema",), "the workflow's inputs (the deps' properties)")


def _instructions(conv: Conversion, src: Source, data: Mapping[str, object], one: OneAgent) -> str:
    raw = data.get("instructions")
    parts = raw if isinstance(raw, list) else [raw] if raw is not None else []
    texts = [
        t
        for i, item in enumerate(parts)
        if (
            t := text(
                conv,
                src,
                ("instructions", i) if isinstance(raw, list) else ("instructions",),
                item,
                "an instruction",
            )
        )
    ]

    def render(found: re.Match[str]) -> str:
        key = found.group(1)
        one.inputs.setdefault(
            key,
            {
                "description": f"`{{{{{key}}}}}` in the instructions (a dep).",
                "required": False,
                "default": "",
            },
        )
        return placeholders.variable(key)

    if texts:
        conv.note(
            src, ("instructions",), f"agent {one.name}: its system prompt, `{{{{var}}}}` from the inputs"
        )
    return "\n\n".join(placeholders.template(t.strip(), HANDLEBARS, render) for t in texts)


def _model(conv: Conversion, src: Source, data: Mapping[str, object], one: OneAgent) -> None:
    value = data.get("model")
    if not isinstance(value, str) or not value.strip():
        message = f"{one.name}: the AgentSpec names no `model` (pydantic-ai takes it from Python then)"
        conv.problem(src, (), message, "add `model: provider:model`, e.g. openai:gpt-4o", "missing-key")
        return
    provider, colon, model = value.strip().partition(":")
    pick = llm.from_name(PROVIDERS.get(provider, provider), model) if colon else llm.litellm(value)
    if not pick.usable:
        conv.problem(
            src,
            ("model",),
            f"{one.name}: {pick.problem}",
            "provider:model, e.g. openai:gpt-4o",
            "unknown-model",
        )
        return
    spec = dict(pick.spec) if pick.spec else llm.spec_of(pick.ref or "")
    settings = data.get("model_settings")
    for key, setting in (settings if isinstance(settings, Mapping) else {}).items():
        _setting(conv, src, ("model_settings", key), str(key), setting, spec)
    one.models[one.name] = spec
    one.agent["model"] = one.name
    conv.note(src, ("model",), pick.describe())


def _setting(conv: Conversion, src: Source, where: PathKey, key: str, value: object, spec: Doc) -> None:
    if key in SETTINGS:
        spec[SETTINGS[key]] = value
        conv.note(src, where, f"the model's {SETTINGS[key]}")
    elif key in EXTRA_BODY:
        spec.setdefault("extra_body", {})[key] = value
        conv.note(src, where, f"sent as `{key}` in the request body (extra_body)", "approximated")
    else:
        conv.note(src, where, "not used: flowrun does not send it", "dropped")
        conv.problem(
            src,
            where,
            f"model_settings.{key} is not sent to the model",
            "",
            "ignored-key",
            severity="warning",
            key=True,
        )


def _capabilities(conv: Conversion, src: Source, value: object, one: OneAgent) -> Items:
    out: Items = []
    for i, item in enumerate(value if isinstance(value, list) else []):
        where: PathKey = ("capabilities", i)
        name, args = (
            (item, None)
            if isinstance(item, str)
            else next(iter(item.items()))
            if isinstance(item, Mapping) and len(item) == 1
            else (None, None)
        )
        if not isinstance(name, str):
            conv.problem(
                src,
                where,
                "a capability is `Name`, `{Name: argument}` or `{Name: {keywords}}`",
                "",
                "wrong-type",
            )
            continue
        out += _capability(conv, src, where, name, args, one)
    return out


def _capability(
    conv: Conversion, src: Source, where: PathKey, name: str, args: object, one: OneAgent
) -> Items:
    if name in PYDANTIC_AI:
        eq = PYDANTIC_AI[name]
        conv.note(src, where, ", ".join(eq.tools) + (f" ({eq.why})" if eq.why else ""), eq.how)
        return list(eq.tools)
    if name == "Thinking":
        if one.name in one.models:
            one.models[one.name]["thinking"] = True
        conv.note(
            src,
            where,
            "the model's extended thinking (on; its effort is the provider's default)",
            "approximated",
        )
        return []
    if name == "MCP":
        url = args.get("url") if isinstance(args, Mapping) else args
        if not isinstance(url, str):
            conv.problem(src, where, "MCP needs a server URL: `{MCP: {url: ...}}`", "", "missing-key")
            return []
        server = f"{one.name}-mcp{len(one.servers) + 1}"
        one.servers[server] = {"type": "http", "url": url}
        conv.note(src, where, f"MCP server {server}")
        return [server]
    if name in ("ToolSearch", "PrefixTools", "ImageGeneration", "CodeExecution", "WebBrowse"):
        conv.note(src, where, "dropped: flowrun has no equivalent", "dropped")
        message = f"{one.name}: capability '{name}' has no flowrun equivalent; the agent runs without it"
        conv.problem(
            src,
            where,
            message,
            "the capabilities flowrun maps: docs/how-to/pydantic-ai.md",
            "ignored-tool",
            severity="warning",
        )
        return []
    conv.note(src, where, "refused: a capability registered in Python", "dropped")
    message = (
        f"capability '{name}' is registered in Python (custom_capability_types), which flowrun does not run"
    )
    conv.problem(
        src,
        where,
        message,
        "give the agent flowrun tools that do its job after `flowrun import`",
        "python-capability",
    )
    return []


def _output(conv: Conversion, src: Source, data: Mapping[str, object], one: OneAgent) -> None:
    schema = data.get("output_schema")
    if isinstance(schema, Mapping):
        one.agent["output_schema"] = dict(schema)
        conv.note(
            src, ("output_schema",), "output_schema (flowrun checks the answer against it)", "approximated"
        )
    retries = data.get("output_retries", data.get("retries"))
    if (
        isinstance(retries, int)
        and not isinstance(retries, bool)
        and retries >= 0
        and "output_schema" in one.agent
    ):
        one.agent["output_repairs"] = min(retries, 10)
        conv.note(src, ("output_retries" if "output_retries" in data else "retries",), "output_repairs")
