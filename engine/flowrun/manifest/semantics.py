"""Rules that span several keys of one manifest, checked after its JSON Schema passed
(the schema cannot say "exactly one of" or "needs base_url when ...")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.ecosystem.a2a_config import declaration_problems
from flowrun.manifest.ecosystem.mcp_config import server_problems
from flowrun.manifest.guardrails.rules import guardrail_problems
from flowrun.manifest.hooks import hook_problems
from flowrun.manifest.yaml_source import Source
from flowrun.providers.registry import PROVIDERS, provider_class


def problems(kind: str, src: Source) -> list[Diagnostic]:
    data = src.data
    out: list[Diagnostic] = []
    if kind == "workflow":
        if ("entry" in data) == ("steps" in data) and not src.lost((), "entry", "steps"):
            where = ("steps",) if "steps" in data else ()
            out.append(
                src.diag(
                    where, "a workflow needs exactly one of `entry` or `steps`", "keep one of them", "invalid"
                )
            )
        for name, model in (data.get("models") or {}).items():
            out += _model_problems(src, ("models", name), model)
        servers = data.get("mcp_servers")
        for name, server in (servers if isinstance(servers, dict) else {}).items():
            out += server_problems(src, ("mcp_servers", name), server)
        agents = data.get("a2a_agents")
        for name, a2a in (agents if isinstance(agents, dict) else {}).items():
            out += declaration_problems(src, ("a2a_agents", name), a2a)
        out += hook_problems(src, ("hooks",), data.get("hooks"))
    elif kind == "models":
        for name, model in (data.get("models") or {}).items():
            out += _model_problems(src, ("models", name), model)
    elif kind == "agent":
        out += _agent_problems(src, data)
        out += hook_problems(src, ("hooks",), data.get("hooks"))
        out += guardrail_problems(src, data.get("guardrails"))
    return out


def _model_problems(src: Source, parts: tuple[Any, ...], model: Mapping[str, object]) -> list[Diagnostic]:
    provider = model.get("provider")
    if src.lost(parts, "provider", "preset"):
        return []  # the schema error there says it
    if provider is None and model.get("preset") is None:
        return [
            src.diag(parts, "a model needs `provider` or `preset`", "e.g. provider: anthropic", "invalid")
        ]
    # a preset (or a provider the schema has already refused)
    if not isinstance(provider, str) or provider not in PROVIDERS:
        return []
    for key, hint in provider_class(provider).requires.items():  # what the provider type declares
        if not model.get(key) and not src.was_cut((*parts, key)):
            return [src.diag(parts, f"provider {provider} needs `{key}`", hint, "invalid")]
    return []


def _agent_problems(src: Source, data: Mapping[str, object]) -> list[Diagnostic]:
    out = []
    for key in ("tools", "selectable_models"):
        if isinstance(data.get(key), dict) and "extends" not in data and not src.was_cut(("extends",)):
            message = f"`{key}: {{add, remove}}` changes an inherited list, but this agent has no `extends`"
            hint = f"write `{key}` as a list, or add `extends: PARENT`"
            out.append(src.diag((key,), message, hint, "invalid", key=True))
    if "prompt" in data and "prompt_file" in data:
        out.append(
            src.diag(("prompt_file",), "set `prompt` or `prompt_file`, not both", "keep one", "invalid")
        )
    prompt_file = data.get("prompt_file")
    if isinstance(prompt_file, str) and (
        prompt_file.startswith("/") or ".." in prompt_file.replace("\\", "/").split("/")
    ):
        out.append(
            src.diag(
                ("prompt_file",),
                f"prompt_file {prompt_file!r} must be a relative path inside prompts/, without '..'",
                "name a template under the prompts/ folder",
                "bad-path",
            )
        )
    return out
