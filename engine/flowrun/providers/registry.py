"""Every provider type flowrun knows, in one table. A provider is one module with a `Provider`
subclass plus one line here; the module is imported only when it is first needed (its SDK only
when a run first calls it), and the manifest schema's `provider` choices come from this table.
What a model of each type needs (its key variable, required keys) is declared on the class."""

from __future__ import annotations

import importlib

from flowrun.errors import ProviderError
from flowrun.providers.base import ModelConfig, Provider, RetryHook

PROVIDERS: dict[str, str] = {  # provider type -> "module:Class"
    "anthropic": "flowrun.providers.anthropic_provider:AnthropicProvider",
    "openai": "flowrun.providers.openai_provider:OpenAIProvider",
    "openai-compatible": "flowrun.providers.openai_provider:OpenAICompatibleProvider",
    "test": "flowrun.providers.test_provider:TestProvider",
    "scripted": "flowrun.providers.scripted_provider:ScriptedProvider",
    "direct": "flowrun.providers.direct_provider:DirectProvider",
}


def provider_class(name: str) -> type[Provider]:
    target = PROVIDERS.get(name)
    if target is None:
        known = ", ".join(PROVIDERS)
        raise ProviderError(f"unknown provider '{name}'", f"use one of: {known}")
    module_name, _, class_name = target.partition(":")
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
