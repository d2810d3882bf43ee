"""Remote A2A agents' declarations (a workflow's `a2a_agents:`): the rules the schema cannot
say, and `${VAR}` expansion of their URL and headers when an agent is called."""

from __future__ import annotations

import os
from collections.abc import Mapping

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.ecosystem.mcp_config import VARIABLE, expand
from flowrun.manifest.specs import A2aAgentSpec
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
