"""Every provider type flowrun knows, in one table. A provider is one module with a `Provider`
subclass plus one line here; the module is imported only when a run first uses it, and the
manifest schema's `provider` choices come from this table.

`key_env` is the variable a model reads its key from when its manifest names none;
`needs_key` is False for providers that never call a service (test, scripted)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from flowrun.errors import ProviderError
from flowrun.providers.base import ModelConfig, Provider, RetryHook


@dataclass(frozen=True, slots=True)
class ProviderEntry:
    target: str  # "module:Class"
    key_env: str | None = None
    needs_key: bool = True
    needs_base_url: bool = False
    token_env: str | None = None  # a bearer token used when the model names no key and key_env is unset


PROVIDERS: dict[str, ProviderEntry] = {
    "anthropic": ProviderEntry(
        "flowrun.providers.anthropic_provider:AnthropicProvider",
        "ANTHROPIC_API_KEY",
        token_env="ANTHROPIC_AUTH_TOKEN",
    ),
    "openai": ProviderEntry("flowrun.providers.openai_provider:OpenAIProvider", "OPENAI_API_KEY"),
    # any server speaking Chat Completions at `base_url`; resolved models name it `openai`
    "openai-compatible": ProviderEntry(
        "flowrun.providers.openai_provider:OpenAIProvider", needs_base_url=True
    ),
    "test": ProviderEntry("flowrun.providers.test_provider:TestProvider", needs_key=False),
    "scripted": ProviderEntry("flowrun.providers.scripted_provider:ScriptedProvider", needs_key=False),
}


def provider_class(name: str) -> type[Provider]:
    entry = PROVIDERS.get(name)
    if entry is None:
        known = ", ".join(PROVIDERS)
        raise ProviderError(f"unknown provider '{name}'", f"use one of: {known}")
    module_name, _, class_name = entry.target.partition(":")
    cls: type[Provider] = getattr(importlib.import_module(module_name), class_name)
    return cls


def make_provider(config: ModelConfig, on_retry: RetryHook | None = None) -> Provider:
    """The provider for a resolved model: its class from the table, wrapped for the ReAct text
    protocol when the model asks for `tool_calling: react`."""
    provider = provider_class(config.provider)(config)
    provider.on_retry = on_retry
    if config.tool_calling == "react":
        from flowrun.providers.react import ReactProvider

        return ReactProvider(provider)
    return provider
