"""From a model reference (a name, or `provider:model`) to the ModelConfig a provider gets.
Presets for OpenAI-compatible services are configuration only: a base_url and a key variable."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flowrun.errors import ManifestError
from flowrun.providers.base import ModelConfig


@dataclass(frozen=True, slots=True)
class Preset:
    base_url: str
    api_key_env: str
    key_optional: bool = False


PRESETS: dict[str, Preset] = {
    "deepseek": Preset("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "qwen": Preset("https://dashscope.aliyuncs.com/compatible-mode/v1", "DASHSCOPE_API_KEY"),
    "glm": Preset("https://open.bigmodel.cn/api/paas/v4", "ZHIPUAI_API_KEY"),
    "moonshot": Preset("https://api.moonshot.cn/v1", "MOONSHOT_API_KEY"),
    "ollama": Preset("http://localhost:11434/v1", "OLLAMA_API_KEY", key_optional=True),
    "vllm": Preset("http://localhost:8000/v1", "VLLM_API_KEY", key_optional=True),
    "openrouter": Preset("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
}
DEFAULT_KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
SHORTHAND_PROVIDERS = ("anthropic", "openai", "test", "scripted", *PRESETS)


def split_ref(ref: str) -> tuple[str, str] | None:
    """`provider:model` → (provider, model); None when `ref` is a plain name."""
    if ":" not in ref:
        return None
    provider, _, model = ref.partition(":")
    return provider, model


def reference_problem(ref: str, named: set[str]) -> str | None:
    """Why `ref` names no model, or None when it is fine."""
    if ref in named:
        return None
    parts = split_ref(ref)
    if parts is None:
        return f"unknown model '{ref}'"
    provider, model = parts
    if provider not in SHORTHAND_PROVIDERS:
        return f"unknown provider '{provider}' in '{ref}'"
    if not model:
        return f"'{ref}' names no model after the ':'"
    return None


def config_from_spec(name: str, spec: Any, base_dir: Path) -> ModelConfig:
    """A ModelSpec (manifest) → ModelConfig (what a provider gets)."""
    preset = PRESETS.get(spec.preset) if spec.preset else None
    compatible = spec.provider == "openai-compatible"
    provider = "openai" if compatible or spec.provider is None else spec.provider
    thinking = spec.thinking
    budget = 2048
    if thinking is not None and not isinstance(thinking, bool):
        budget = thinking.budget_tokens
        thinking = thinking.enabled
    price = spec.price
    options: dict[str, Any] = {}
    if (preset is not None and preset.key_optional) or (compatible and not spec.api_key_env):
        options["key_optional"] = True
    if spec.script:
        options["script"] = str((base_dir / spec.script).resolve())
    default_env = None if compatible else DEFAULT_KEY_ENV.get(provider)
    api_key_env = spec.api_key_env or (preset.api_key_env if preset else default_env)
    return ModelConfig(
        name=name,
        provider=provider,
        model=spec.model,
        base_url=spec.base_url or (preset.base_url if preset else None),
        api_key_env=api_key_env,
        auth_token_env=spec.auth_token_env,
        max_tokens=spec.max_tokens or 4096,
        temperature=spec.temperature,
        thinking=bool(thinking),
        thinking_budget=budget,
        stream=True if spec.stream is None else spec.stream,
        timeout_s=spec.timeout_s or 300.0,
        max_retries=4 if spec.max_retries is None else spec.max_retries,
        headers=dict(spec.headers or {}),
        price_input=price.input if price else None,
        price_output=price.output if price else None,
        price_cache_read=price.cache_read if price else None,
        price_cache_write=price.cache_write if price else None,
        context_window=spec.context_window or 128_000,
        tool_calling=spec.tool_calling or "native",
        options=options,
    )


def config_from_shorthand(ref: str, base_dir: Path) -> ModelConfig:
    from flowrun.manifest.view import model_view

    parts = split_ref(ref)
    problem = reference_problem(ref, set())
    if parts is None or problem:
        raise ManifestError(
            problem or f"unknown model '{ref}'", "use a name from `models:` or provider:model"
        )
    provider, model = parts
    if provider in PRESETS:
        spec = model_view({"preset": provider, "model": model})
    elif provider == "scripted":
        spec = model_view({"provider": "scripted", "model": "script", "script": model})
    else:
        spec = model_view({"provider": provider, "model": model})
    return config_from_spec(ref, spec, base_dir)
