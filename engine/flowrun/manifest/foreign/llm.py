"""Model names as other frameworks write them, as flowrun models: LiteLLM's `provider/model`
(CrewAI, docker-agent's inline models), a bare model id (`gpt-4o`, `claude-...`, ADK's
`gemini-2.0-flash`) and a settings object (CrewAI's `{model, provider, base_url}`,
docker-agent's `models:` entries).

Each gives either a reference an agent's `model:` takes as it is (`provider:model`, a preset's
or a provider's shorthand) or a model's settings for the workflow's `models:`; a name flowrun
has no provider for gives a reason instead, and the agent keeps the workflow's default model."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from flowrun.manifest.foreign.conversion import Doc
from flowrun.providers.presets import PRESETS

# a framework's provider prefix -> flowrun's provider or preset of the same service
PROVIDERS: dict[str, str] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "ollama": "ollama",
    "ollama_chat": "ollama",
    "deepseek": "deepseek",
    "openrouter": "openrouter",
    "gemini": "gemini",
    "google": "gemini",
    "mistral": "mistral",
    "xai": "xai",
    "groq": "groq",
    "perplexity": "perplexity",
    "moonshot": "moonshot",
    "dashscope": "qwen",
    "qwen": "qwen",
    "zhipuai": "glm",
    "hosted_vllm": "vllm",
    "vllm": "vllm",
}
# OpenAI-compatible services flowrun has no preset for: their endpoint and key variable
COMPATIBLE: dict[str, tuple[str, str | None]] = {
    "dmr": ("http://localhost:12434/engines/v1", None),  # Docker Model Runner, no key
    "nebius": ("https://api.studio.nebius.com/v1", "NEBIUS_API_KEY"),
    "together_ai": ("https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    "fireworks_ai": ("https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"),
    "cerebras": ("https://api.cerebras.ai/v1", "CEREBRAS_API_KEY"),
}
# a bare model id's provider, by how the id starts (what LiteLLM and ADK infer)
BARE_PREFIXES = (
    ("gpt-", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("chatgpt-", "openai"),
    ("claude-", "anthropic"),
    ("gemini-", "gemini"),
    ("deepseek-", "deepseek"),
    ("mistral-", "mistral"),
    ("grok-", "xai"),
)
# settings objects' keys that a flowrun model takes under the same name
SAME_KEYS = ("temperature", "max_tokens", "base_url")


@dataclass(slots=True)
class ModelPick:
    """What a foreign model name became: a reference for an agent's `model:` (`ref`), or
    settings for the workflow's `models:` (`spec`), or why neither (`problem`)."""

    ref: str | None = None
    spec: Doc | None = None
    problem: str | None = None
    dropped: list[str] = field(default_factory=list)  # settings flowrun does not take

    @property
    def usable(self) -> bool:
        return self.problem is None

    def describe(self) -> str:
        if self.problem is not None:
            return self.problem
        return (
            f"model {self.ref}"
            if self.ref
            else "model " + ", ".join(f"{k}: {v}" for k, v in (self.spec or {}).items())
        )


def from_name(provider: str, model: str) -> ModelPick:
    """A model of `provider` (the framework's prefix) with id `model`."""
    if not model:
        return ModelPick(problem=f"'{provider}/' names no model")
    known = PROVIDERS.get(provider.lower())
    if known is not None:
        return ModelPick(ref=f"{known}:{model}")
    compatible = COMPATIBLE.get(provider.lower())
    if compatible is not None:
        base_url, key = compatible
        spec: Doc = {"provider": "openai-compatible", "model": model, "base_url": base_url}
        if key:
            spec["api_key_env"] = key
        return ModelPick(spec=spec)
    return ModelPick(problem=f"flowrun has no provider for '{provider}/{model}'")


def litellm(value: str) -> ModelPick:
    """A LiteLLM model string: `provider/model` or a bare id whose provider LiteLLM infers."""
    value = value.strip()
    provider, slash, model = value.partition("/")
    if slash and (provider.lower() in PROVIDERS or provider.lower() in COMPATIBLE):
        return from_name(provider, model)
    bare = value.lower()
    for prefix, inferred in BARE_PREFIXES:
        if bare.startswith(prefix):
            return ModelPick(ref=f"{inferred}:{value}")
    if slash:
        return from_name(provider, model)
    return ModelPick(problem=f"'{value}' names no provider (write provider/model, e.g. openai/gpt-4o)")


def settings(raw: Mapping[str, object], provider_key: str = "provider") -> ModelPick:
    """A settings object `{model, provider, base_url, temperature, max_tokens, ...}`."""
    model = raw.get("model")
    if not isinstance(model, str) or not model.strip():
        return ModelPick(problem="the model settings name no `model`")
    provider = raw.get(provider_key)
    pick = from_name(str(provider), model) if isinstance(provider, str) and provider else litellm(model)
    if not pick.usable:
        return pick
    spec = dict(pick.spec) if pick.spec else spec_of(pick.ref or "")
    spec.update({k: raw[k] for k in SAME_KEYS if raw.get(k) is not None})
    if (
        spec.get("preset") == "ollama"
        and "base_url" in spec
        and not str(spec["base_url"]).rstrip("/").endswith("/v1")
    ):
        spec["base_url"] = str(spec["base_url"]).rstrip("/") + "/v1"  # LiteLLM's is the server's root
    if (
        "base_url" in spec
        and spec.get("preset") is None
        and spec.get("provider") not in ("openai-compatible",)
    ):
        spec.setdefault("provider", "openai")
    dropped = [k for k in raw if k not in (*SAME_KEYS, "model", provider_key)]
    return ModelPick(spec=spec, dropped=dropped)


def spec_of(ref: str) -> Doc:
    """`provider:model` as the settings of a named model."""
    provider, _, model = ref.partition(":")
    if provider in PRESETS:
        return {"preset": provider, "model": model}
    return {"provider": provider, "model": model}
