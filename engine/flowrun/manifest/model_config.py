"""From a model reference (a name, or `provider:model`) to the ModelConfig a provider gets.
Every setting's default comes from `ModelSpec` (specs.py); presets and provider types come from
the provider layer's tables."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from flowrun.errors import ManifestError
from flowrun.manifest.env_refs import REFERENCE, default_base_url, default_model_ref, expanded
from flowrun.manifest.project import parse_manifest
from flowrun.manifest.schema.salvage import ANY_NAME
from flowrun.manifest.specs import ModelSpec, ScriptManifest, Thinking
from flowrun.providers.base import ModelConfig
from flowrun.providers.presets import PRESETS, Preset
from flowrun.providers.registry import PROVIDERS, provider_class


def split_ref(ref: str) -> tuple[str, str] | None:
    """`provider:model` → (provider, model); None when `ref` is a plain name."""
    if ":" not in ref:
        return None
    provider, _, model = ref.partition(":")
    return provider, model


def shorthand(provider: str, model: str) -> dict[str, object] | None:
    """The `models:` keys `PROVIDER:MODEL` stands for: a preset's, or a provider type's when a
    model id is enough for it (its class says); None for any other name."""
    if provider in PRESETS:
        return {"preset": provider, "model": model}
    if provider in PROVIDERS and (keys := provider_class(provider).shorthand(model)) is not None:
        return {"provider": provider, **keys}
    return None


def reference_problem(ref: str, named: set[str]) -> str | None:
    """Why `ref` names no model, or None when it is fine (`named` holding ANY_NAME: a file of
    model names was unreadable, so a plain name may be one of them)."""
    if ref in named or default_model_ref(ref) is not None:  # `openai`: the model OPENAI_MODEL names
        return None
    parts = split_ref(ref)
    if parts is None:
        return None if ANY_NAME in named else f"unknown model '{ref}'"
    provider, model = parts
    if shorthand(provider, model) is None:
        if provider in PROVIDERS:
            return f"provider {provider} needs more than a model id: '{ref}' is not enough"
        return f"unknown provider '{provider}' in '{ref}'"
    if not model:
        return f"'{ref}' names no model after the ':'"
    return None


def config_from_spec(name: str, spec: ModelSpec, base_dir: Path, strict_env: bool = True) -> ModelConfig:
    """A ModelSpec (manifest) → ModelConfig (what a provider gets), its `${VAR}` references
    replaced (UnsetVariable for one that is unset without a default, when `strict_env`)."""
    referenced = sorted(
        {m for field in (spec.headers, spec.extra_headers) for v in field.values() for m in _names(v)}
    )
    spec = expanded(name, spec, strict=strict_env)
    preset = PRESETS.get(spec.preset) if spec.preset else None
    compatible = spec.provider == "openai-compatible"
    provider = "openai" if compatible or spec.provider is None else spec.provider
    thinking = spec.thinking if isinstance(spec.thinking, Thinking) else Thinking(enabled=spec.thinking)
    price = spec.price
    key_optional = (preset is not None and preset.key_optional) or (compatible and not spec.api_key_env)
    options = _provider_options(spec, base_dir, key_optional, referenced)
    entry = provider_class(spec.provider or provider) if (spec.provider or provider) in PROVIDERS else None
    default_env = None if entry is None else entry.key_env
    # the SDK's own fallback: its default key variable unset, its default token variable is used
    default_key = entry is not None and spec.api_key_env in (None, entry.key_env) and not spec.auth_token_env
    thinking_off = (
        spec.thinking_off if spec.thinking_off is not None else (preset.thinking_off if preset else {})
    )
    thinking_on = spec.thinking_on if spec.thinking_on is not None else (preset.thinking_on if preset else {})
    return ModelConfig(
        name=name,
        provider=provider,
        model=spec.model,
        base_url=spec.base_url or (preset.base_url if preset else default_base_url(provider)),
        api_key_env=spec.api_key_env or (preset.api_key_env if preset else default_env),
        auth_token_env=spec.auth_token_env,
        max_tokens=spec.max_tokens,
        temperature=spec.temperature,
        thinking=thinking.enabled,
        thinking_budget=thinking.budget_tokens,
        stream=spec.stream,
        timeout_s=spec.timeout_s,
        max_retries=spec.max_retries,
        context_window=spec.context_window,
        tool_calling=spec.tool_calling,
        structured_output=spec.structured_output,
        headers=dict(spec.headers),
        price_input=price.input if price else None,
        price_output=price.output if price else None,
        price_cache_read=price.cache_read if price else None,
        price_cache_write=price.cache_write if price else None,
        options=options,
        fallback=list(spec.fallback),
        cooldown_s=spec.cooldown_s,
        extra_body=dict(spec.extra_body),
        extra_headers=dict(spec.extra_headers),
        thinking_off=dict(thinking_off),
        send_thinking_off="thinking" in spec.model_fields_set and not thinking.enabled,
        thinking_on=dict(thinking_on),
        send_thinking_on="thinking" in spec.model_fields_set and thinking.enabled,
        tool_history=spec.tool_history,
        token_env=_token_env(spec, entry, default_key, preset),
        requests_per_minute=spec.rate_limit.requests_per_minute if spec.rate_limit else None,
        tokens_per_minute=spec.rate_limit.tokens_per_minute if spec.rate_limit else None,
    )


def _provider_options(
    spec: ModelSpec, base_dir: Path, key_optional: bool, secret_env: list[str]
) -> dict[str, object]:
    """What a provider reads besides the common settings: whether its key may be missing, the
    variables whose values are redacted like a key, a scripted model's script."""
    options: dict[str, object] = {}
    if key_optional:
        options["key_optional"] = True
    if secret_env:  # a header may carry a token: its value is redacted like a key
        options["secret_env"] = secret_env
    if spec.script:
        path = (base_dir / spec.script).resolve()
        options["script_path"] = str(path)
        options["script"] = load_script(path)
    return options


def _names(text: str) -> list[str]:
    return [m.group(1) for m in REFERENCE.finditer(text)]


def _token_env(spec: ModelSpec, entry: Any, default_key: bool, preset: Preset | None) -> str | None:
    """The variable read when the key variable is unset: the provider's token (Anthropic's
    ANTHROPIC_AUTH_TOKEN), or the other name a preset's key goes by (glm: GLM_API_KEY)."""
    if preset is not None and not spec.api_key_env:
        return preset.key_alias
    token: str | None = entry.token_env if default_key and entry is not None else None
    return token


def config_from_shorthand(ref: str, base_dir: Path) -> ModelConfig:
    default = default_model_ref(ref)
    if default is not None:  # `--model openai`: the model OPENAI_MODEL names
        variable, model = default
        provider = ref.rstrip(":")
        if model is None:
            raise ManifestError(
                f"'{ref}' names no model and {variable} is not set",
                f"set {variable} (e.g. in a .env file), or give the model: {provider}:MODEL",
            )
        return config_from_spec(f"{provider}:{model}", ModelSpec(provider=provider, model=model), base_dir)
    parts = split_ref(ref)
    problem = reference_problem(ref, set())
    if parts is None or problem:
        raise ManifestError(
            problem or f"unknown model '{ref}'", "use a name from `models:` or provider:model"
        )
    keys = shorthand(*parts)
    assert keys is not None  # reference_problem said so
    return config_from_spec(ref, ModelSpec.model_validate(keys), base_dir)


def model_config(name: str, base_dir: Path = Path("."), **fields: object) -> ModelConfig:
    """A ModelConfig from manifest keys (`provider`, `model`, `price`, ...), checked like a
    `models:` entry: for tests and programs that build a model without a manifest file."""
    return config_from_spec(name, ModelSpec.model_validate(fields), base_dir)


def load_script(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The replies of a `kind: script` file, checked like any manifest (cached per version of
    the file, since every new agent instance resolves its model)."""
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        raise ManifestError(f"script file {path} not found", "check the model's `script:` path") from None
    return _load_script(path, stamp)


@cache
def _load_script(path: Path, stamp: int) -> dict[str, list[dict[str, Any]]]:
    _, spec, _, diags = parse_manifest(path)
    if not isinstance(spec, ScriptManifest):
        first = diags[0].text() if diags else f"{path} is not a `kind: script` manifest"
        raise ManifestError(f"bad script file: {first}", "see `flowrun schema script`")
    return {
        name: [{"text": r.text, "tool_calls": [c.model_dump() for c in r.tool_calls]} for r in replies]
        for name, replies in spec.agents.items()
    }
