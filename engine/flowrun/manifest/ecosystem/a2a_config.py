"""Remote A2A agents' declarations (a workflow's `a2a_agents:`, or an agent's tool entry
`NAME: {a2a: {...}}`): the rules the schema cannot say, the declarations found in tool entries,
and `${VAR}` expansion of their URL and headers when an agent is called."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.ecosystem.mcp_config import VARIABLE, expand
from flowrun.manifest.specs import A2aAgentSpec, AgentManifest
from flowrun.manifest.yaml_source import PathKey, Source

SCHEMES = ("http://", "https://")


def declaration_problems(src: Source, parts: PathKey, raw: object) -> list[Diagnostic]:
    """Rules the schema cannot say of one `a2a_agents:` entry (checked on the raw YAML)."""
    if not isinstance(raw, dict):
        return []
    out: list[Diagnostic] = []
    url = raw.get("url")
    if isinstance(url, str) and not url.startswith(SCHEMES) and not url.startswith("${"):
        message = f"an A2A agent's url must start with http:// or https://, not {url!r}"
        hint = "the agent's base URL, e.g. https://agents.example.com/translator (its card is below it)"
        out.append(src.diag((*parts, "url"), message, hint, "invalid"))
    path = raw.get("card_path")
    if isinstance(path, str) and not path.startswith("/"):
        out.append(src.diag((*parts, "card_path"), "card_path starts with /", f"e.g. /{path}", "invalid"))
    headers = raw.get("headers")
    for key, value in (headers if isinstance(headers, dict) else {}).items():
        if isinstance(value, str) and "$" in value and not VARIABLE.search(value):
            hint = "write a variable as ${NAME} (or ${NAME:-default})"
            message = f"header '{key}' has a '$' that names no variable"
            out.append(src.diag((*parts, "headers", key), message, hint, "invalid"))
    return out


def resolved(spec: A2aAgentSpec, environ: Mapping[str, str] | None = None) -> tuple[str, dict[str, str]]:
    """The URL and headers with their variables read; KeyError names an unset variable."""
    env = os.environ if environ is None else environ
    return expand(spec.url, env), {key: expand(value, env) for key, value in spec.headers.items()}


@dataclass(frozen=True, slots=True)
class Inline:
    """An A2A agent declared in an agent's tool entry (`- NAME: {a2a: {url: ...}}`)."""

    spec: A2aAgentSpec
    source: Source
    root: Path
    where: PathKey  # the entry's `a2a` key


def inline_agents(
    agents: Iterable[tuple[AgentManifest, Source, Path]], declared: Mapping[str, object]
) -> tuple[dict[str, Inline], list[Diagnostic]]:
    """The A2A agents declared in agents' tool entries, and their problems: a declaration the
    schema or the rules refuse, a name the workflow's `a2a_agents:` declares too, one name
    declared two ways."""
    from flowrun.manifest.schema.typed import check_model

    found: dict[str, Inline] = {}
    out: list[Diagnostic] = []
    for agent, src, root in agents:
        for i, entry in enumerate(agent.tool_list):
            if not isinstance(entry, dict):
                continue
            name, config = next(iter(entry.items()))
            if not isinstance(config, dict) or "a2a" not in config:
                continue
            where: PathKey = ("tools", i, name, "a2a")
            raw = config["a2a"]
            rules = declaration_problems(src, where, raw)
            spec, problems = check_model(src, A2aAgentSpec, raw, where)
            out += rules + problems
            if spec is None or rules:
                continue
            assert isinstance(spec, A2aAgentSpec)
            if name in declared:
                message = f"A2A agent '{name}' is declared both here and in the workflow's `a2a_agents:`"
                out.append(src.diag(where, message, "keep one of the declarations", "duplicate-name"))
            elif name in found and found[name].spec != spec:
                other = found[name].source.display
                message = f"A2A agent '{name}' is declared differently in {other}"
                hint = "declare it once, in the workflow's `a2a_agents:`, and list its name"
                out.append(src.diag(where, message, hint, "duplicate-name"))
            else:
                found.setdefault(name, Inline(spec, src, root, where))
    return found, out
