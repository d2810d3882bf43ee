"""ModelConfig for provider-level tests: every setting at its manifest default (from the
`models` spec), streaming off unless a test turns it on, then the test's own settings."""

from __future__ import annotations

import dataclasses
from typing import Any

from flowrun.manifest.model_config import model_config
from flowrun.providers.base import ModelConfig


def provider_config(
    name: str = "fast", provider: str = "openai", model: str = "m", **settings: Any
) -> ModelConfig:
    base = model_config(name, provider=provider, model=model)
    return dataclasses.replace(base, **{"stream": False, **settings})
