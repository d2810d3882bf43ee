"""Provider type → Provider class, imported only when a run needs it."""

from __future__ import annotations

from flowrun.errors import ProviderError
from flowrun.providers.base import ModelConfig, Provider


def make_provider(config: ModelConfig) -> Provider:
    if config.provider == "anthropic":
        from flowrun.providers.anthropic_provider import AnthropicProvider

        return AnthropicProvider(config)
    if config.provider == "openai":
        from flowrun.providers.openai_provider import OpenAIProvider

        return OpenAIProvider(config)
    if config.provider == "test":
        from flowrun.providers.test_provider import TestProvider

        return TestProvider(config)
    if config.provider == "scripted":
        from flowrun.providers.scripted_provider import ScriptedProvider

        return ScriptedProvider(config)
    raise ProviderError(f"unknown provider '{config.provider}'", "use anthropic, openai, test or scripted")
