"""docker-agent's models as flowrun's: an agent's `model` (a `models:` entry, or `provider/model`
inline; an alloy `a,b` takes the first), its `fallback` models, and the named settings
(`max_tokens`, `temperature`, `base_url`, `token_key`, `thinking_budget`; sampling settings as
extra body fields) with custom `providers:` as OpenAI-compatible endpoints."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from flowrun.manifest.foreign import llm
from flowrun.manifest.foreign.conversion import Conversion, Doc, flowrun_name
from flowrun.manifest.yaml_source import PathKey, Source

DEFAULT_MODEL = "docker-agent-default"
DOCKER_DEFAULT = {"provider": "anthropic", "model": "claude-sonnet-4-5"}  # what `auto` picks with a key
EXTRA_BODY = ("top_p", "frequency_penalty", "presence_penalty")
DROPPED = {
    "provider_opts": "provider options are not sent",
    "parallel_tool_calls": "the model decides whether to call tools in parallel",
    "routing": "rule-based routing between models is not reproduced; the model itself is used",
    "track_usage": "flowrun always records usage",
}
DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)$")
UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


@dataclass
class Models:
    """The workflow's models, built from the file's `models:`, `providers:` and inline names."""

    conv: Conversion
    src: Source
    named: Mapping[str, object]  # the file's `models:`
    providers: Mapping[str, object]  # the file's `providers:`
    out: dict[str, Doc] = field(default_factory=lambda: {DEFAULT_MODEL: dict(DOCKER_DEFAULT)})

    def ref(self, value: object, where: PathKey, owner: str) -> str | None:
        """An agent's `model` as a flowrun reference (None: the default model, with a warning
        when it could not be read)."""
        if not isinstance(value, str) or not value.strip():
            return None
        first = value.split(",")[0].strip()
        if first != value.strip():
            self.conv.note(
                self.src,
                where,
                f"model {first}: the first of the alloy (docker-agent alternates them)",
                "approximated",
            )
        if first in self.named:
            return self._named(first)
        pick = self._inline(first)
        if not pick.usable:
            self.conv.note(self.src, where, f"the default model: {pick.problem}", "approximated")
            message = (
                f"{owner}: {pick.problem}; it uses {DOCKER_DEFAULT['provider']}/{DOCKER_DEFAULT['model']}"
            )
            self.conv.problem(
                self.src,
                where,
                message,
                "provider/model, or a name from `models:`",
                "unknown-model",
                severity="warning",
            )
            return None
        self.conv.note(self.src, where, pick.describe())
        if pick.spec is None:
            return pick.ref
        name = flowrun_name(first.replace("/", "-"))
        self.out[name] = pick.spec
        return name

    def _inline(self, value: str) -> llm.ModelPick:
        provider, slash, model = value.partition("/")
        if slash and provider in self.providers:
            return self._custom(provider, model)
        return llm.from_name(provider, model) if slash else llm.litellm(value)

    def _custom(self, provider: str, model: str) -> llm.ModelPick:
        raw = self.providers[provider]
        settings = raw if isinstance(raw, Mapping) else {}
        spec: Doc = {"provider": "openai-compatible", "model": model}
        if isinstance(settings.get("base_url"), str):
            spec["base_url"] = settings["base_url"]
        if isinstance(settings.get("token_key"), str):
            spec["api_key_env"] = settings["token_key"]
        return llm.ModelPick(spec=spec)

    def _named(self, name: str) -> str | None:
        flowrun = flowrun_name(name)
        if flowrun in self.out:
            return flowrun
        raw = self.named[name]
        config = raw if isinstance(raw, Mapping) else {}
        base = ("models", name)
        provider, model = config.get("provider"), config.get("model")
        if not isinstance(model, str):
            self.conv.problem(
                self.src, base, f"model '{name}' names no `model`", "add `model:`", "missing-key"
            )
            return None
        pick = self._inline(f"{provider}/{model}" if isinstance(provider, str) else model)
        if not pick.usable:
            message = f"model '{name}': {pick.problem}; agents that use it get the default model"
            self.conv.problem(self.src, (*base, "provider"), message, "", "unknown-model", severity="warning")
            return None
        spec = dict(pick.spec) if pick.spec else llm.spec_of(pick.ref or "")
        self.out[flowrun] = _settings(self.conv, self.src, base, config, spec)
        self.conv.note(self.src, base, f"model {flowrun}: {model}")
        return flowrun

    def with_fallback(self, ref: str | None, fallback: object, where: PathKey, owner: str) -> str | None:
        """The agent's model with `fallback: {models, retries, cooldown}` as flowrun's fallback chain."""
        if not isinstance(fallback, Mapping):
            return ref
        models = fallback.get("models")
        chain = [
            r
            for i, m in enumerate(models if isinstance(models, list) else [])
            if (r := self.ref(m, (*where, "models", i), owner))
        ]
        named = self.out.get(ref or DEFAULT_MODEL)
        base = dict(named) if named is not None else llm.spec_of(ref or "")
        base["fallback"] = chain
        if isinstance(fallback.get("retries"), int) and fallback["retries"] >= 0:
            base["max_retries"] = min(20, fallback["retries"])
        cooldown = _seconds(fallback.get("cooldown"))
        if cooldown:
            base["cooldown_s"] = cooldown
        name = flowrun_name(f"{owner}-with-fallback")
        self.out[name] = base
        self.conv.note(self.src, where, f"model {name}: falls back to {', '.join(chain) or 'nothing'}")
        return name


def _settings(conv: Conversion, src: Source, base: PathKey, config: Mapping[str, object], spec: Doc) -> Doc:
    extra: dict[str, object] = {}
    for key, value in config.items():
        where = (*base, key)
        if key in ("provider", "model"):
            continue
        if key in ("max_tokens", "temperature", "base_url"):
            spec[key] = value
        elif key == "token_key":
            spec["api_key_env"] = value
        elif key == "thinking_budget":
            spec["thinking"] = _thinking(value)
            conv.note(src, where, f"thinking: {spec['thinking']}", "approximated")
        elif key in EXTRA_BODY:
            extra[key] = value
            conv.note(src, where, "sent in the request body (extra_body)", "approximated")
        else:
            conv.note(src, where, f"not used: {DROPPED.get(key, 'flowrun does not send it')}", "dropped")
    if extra:
        spec["extra_body"] = extra
    return spec


def _thinking(value: object) -> bool | Doc:
    """A token budget as extended thinking (at least 1024 tokens); 0, -1 or a level word as on/off."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return {"budget_tokens": max(1024, value)} if value > 0 else False
    return value not in ("none", "off", "minimal")


def _seconds(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    found = DURATION.match(str(value)) if isinstance(value, str) else None
    return float(found.group(1)) * UNITS[found.group(2)] if found else None
