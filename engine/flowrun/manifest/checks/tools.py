"""The checks every tool manifest and every agent's tool entry get, whatever the tool's kind:
the JSON Schemas a manifest declares, the entry keys every entry takes (`approve`, `sandbox`),
the entry's own config against the schema its kind names, and an entry nothing claims. The
checks a kind adds live in the kind's module (runtime/tool_kinds/)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.kinds import EntryRef
from flowrun.manifest.project import Loaded, Project
from flowrun.manifest.sandboxing import check_entry_keys
from flowrun.manifest.schema.check import did_you_mean
from flowrun.manifest.specs import ENTRY_KEYS, ToolManifest
from flowrun.manifest.yaml_source import Source


def schema_problems(loaded: Loaded[ToolManifest]) -> list[Diagnostic]:
    """A tools.d manifest's `parameters` and `config` are JSON Schemas, `parameters` of an
    object, and its `defaults` fit its `config`."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    spec, src = loaded.spec, loaded.source
    out: list[Diagnostic] = []
    invalid: set[str] = set()
    for key in ("parameters", "config"):
        schema = getattr(spec, key)
        if schema is None:
            continue
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as e:
            invalid.add(key)
            out.append(src.diag((key, *e.path), f"invalid JSON Schema: {e.message}", "", "bad-schema"))
    if spec.parameters.get("type") != "object" and "parameters" not in invalid:
        message = "`parameters` must be a JSON Schema with `type: object`"
        out.append(src.diag(("parameters",), message, "", "bad-schema"))
    if spec.config and spec.defaults and not out:
        for err in Draft202012Validator(spec.config).iter_errors(spec.defaults):
            out.append(src.diag(("defaults", *err.path), f"default config: {err.message}", "", "bad-default"))
    return out


def default_warnings(loaded: Loaded[ToolManifest]) -> list[Diagnostic]:
    """A `default` of a parameter that its own schema does not accept (`"default": "None"` on an
    integer, an enum's `N/A`): JSON Schema's `default` is only a note, and flowrun fills in only
    the defaults that are valid, so this one never reaches the tool."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    props = loaded.spec.parameters.get("properties")
    out: list[Diagnostic] = []
    for name, prop in props.items() if isinstance(props, dict) else ():
        if not isinstance(prop, dict) or "default" not in prop:
            continue
        own = {k: v for k, v in prop.items() if k != "default"}
        try:
            problem = next(Draft202012Validator(own).iter_errors(prop["default"]), None)
        except SchemaError:
            continue  # (schema_problems says what is wrong with the schema)
        why = problem.message if problem is not None else "the text None is Python's None written down"
        if problem is not None or prop["default"] == "None":
            message = f"the default of '{name}' does not fit its own schema ({why}): it is never filled in"
            hint = "give a default its schema accepts, or none (a model that leaves it out sends nothing)"
            out.append(
                loaded.source.diag(
                    ("parameters", "properties", name, "default"),
                    message,
                    hint,
                    "bad-default",
                    severity="warning",
                )
            )
    return out


def entry_key_problems(entry: EntryRef) -> list[Diagnostic]:
    """`approve` and `sandbox` of the entry."""
    return check_entry_keys(entry.src, entry.index, entry.name, entry.config)


def config_problems(entry: EntryRef, schema: Mapping[str, object] | None) -> list[Diagnostic]:
    """The entry's own config (its keys but `approve` and `sandbox`) against `schema`; None:
    the tool takes no config."""
    from jsonschema import Draft202012Validator

    config = {k: v for k, v in entry.config.items() if k not in ENTRY_KEYS}
    if not config:
        return []
    src, name = entry.src, entry.name
    if schema is None:
        return [src.diag(entry.where(), f"tool '{name}' takes no config", "remove the config", "bad-config")]
    out: list[Diagnostic] = []
    instance = cast("dict[str, Any]", config)  # JSON as YAML read it
    for err in Draft202012Validator(schema).iter_errors(instance):
        where = entry.where(*err.path)
        if err.validator != "additionalProperties" or not isinstance(err.instance, dict):
            out.append(src.diag(where, f"config of '{name}': {err.message}", "", "bad-config"))
            continue
        # the keys of the (sub)schema that refused them: a nested map such as `budget` has its own
        allowed = set(err.schema.get("properties", {})) if isinstance(err.schema, dict) else set()
        for key in sorted(set(err.instance) - allowed):
            hint = did_you_mean(key, allowed) or "allowed: " + ", ".join(sorted(allowed))
            out.append(
                src.diag((*where, key), f"'{name}' has no config key '{key}'", hint, "bad-config", key=True)
            )
    return out


def unknown_entry(src: Source, index: int, name: str, project: Project) -> Diagnostic:
    """An entry no kind claims: no tool, agent or MCP server has the name."""
    names = set(project.tools) | set(project.agents)
    server, dot, _ = name.partition(".")
    if dot:
        servers = set(project.mcp_servers)
        hint = did_you_mean(server, servers) or (
            "declare it under the workflow's `mcp_servers:` or in .mcp.json"
            if not servers
            else "declared MCP servers: " + ", ".join(sorted(servers))
        )
        return src.diag(("tools", index), f"unknown MCP server '{server}' in '{name}'", hint, "unknown-tool")
    hint = did_you_mean(
        name, names | set(project.mcp_servers) | set(project.a2a_agents)
    ) or "known tools: " + ", ".join(sorted(project.tools))
    if name in AGENT_CALLERS or name.startswith("call_"):  # a design's call_agent(agent_type=...)
        agents = ", ".join(sorted(project.agents)) or "(none here)"
        hint = f"agents are offered as tools by their own names: list the agent itself (agents: {agents})"
    return src.diag(("tools", index), f"unknown tool or agent '{name}'", hint, "unknown-tool")


AGENT_CALLERS = ("call_agent", "agent", "delegate", "handoff", "sub_agent", "subagent")
