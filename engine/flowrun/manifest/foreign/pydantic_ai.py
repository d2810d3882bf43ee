"""pydantic-ai's AgentSpec (`Agent.from_file('agent.yaml')`): one agent whose `model` is
`provider:model`, `instructions` a text or a list with Handlebars `{{var}}` filled from the run's
deps (here: inputs, typed by `deps_schema`), `model_settings`, `output_schema`, and `capabilities`
(WebSearch, WebFetch, Thinking, MCP) where flowrun has the same thing. A capability registered
in Python (`custom_capability_types`) is the user's code: an error."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from flowrun.manifest.foreign import sniff
from flowrun.manifest.foreign.registry import Detected, ForeignFormat

if TYPE_CHECKING:
    from flowrun.manifest.foreign.conversion import Conversion

FIELDS = (
    "model",
    "name",
    "description",
    "instructions",
    "model_settings",
    "capabilities",
    "deps_schema",
    "output_schema",
    "retries",
    "output_retries",
    "end_strategy",
    "tool_timeout",
    "instrument",
    "metadata",
)
MODEL_REF = re.compile(r"^model\s*:\s*['\"]?[\w.-]+:[\w./:-]+", re.MULTILINE)


def is_agent_spec(path: Path) -> bool:
    """A YAML or JSON file (pydantic-ai reads both) whose top-level keys are all AgentSpec
    fields (and `$schema`, which pydantic-ai's `to_file` writes), with instructions,
    capabilities or a `provider:model` model among them."""
    found = sniff.foreign_yaml(path)
    if found is not None:
        text, keys = found
    elif path.suffix == ".json":
        keys, model = sniff.json_top(sniff.head(path))
        text = f"model: {model}" if isinstance(model, str) else ""
    else:
        return False  # (a flowrun manifest, or neither YAML nor JSON)
    if not keys or not keys <= {*FIELDS, "$schema"}:
        return False
    return bool(keys & {"instructions", "capabilities"}) or MODEL_REF.search(text) is not None


class PydanticAIFormat(ForeignFormat):
    name = "pydantic-ai"
    title = "pydantic-ai AgentSpec"

    def detect(self, path: Path) -> Detected | None:
        return Detected(self.name, path, path.parent) if path.is_file() and is_agent_spec(path) else None

    def convert(self, found: Detected) -> Conversion:
        from flowrun.manifest.foreign.pydantic_ai_map import convert_spec

        return convert_spec(found, FIELDS)


FORMAT = PydanticAIFormat()
