"""Microsoft Agent Framework declarative agents: a YAML file with `kind: Prompt` is one agent
(instructions, model, tools, outputSchema). A `kind: Workflow` file, whose actions invoke agents
defined in Azure AI Foundry by name and branch on Power Fx, is recognised and refused in one line."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from flowrun.manifest.foreign import sniff
from flowrun.manifest.foreign.registry import Detected, ForeignFormat

if TYPE_CHECKING:
    from flowrun.manifest.foreign.conversion import Conversion

KINDS = ("Prompt", "Workflow")


class MafFormat(ForeignFormat):
    name = "maf"
    title = "Microsoft Agent Framework"

    def detect(self, path: Path) -> Detected | None:
        found = sniff.foreign_yaml(path)
        if found is None:
            return None
        text, keys = found
        kind = sniff.top_value(text, "kind")
        if (kind == "Prompt" and "instructions" in keys) or (kind == "Workflow" and "trigger" in keys):
            return Detected(self.name, path, path.parent)
        return None

    def convert(self, found: Detected) -> Conversion:
        from flowrun.manifest.foreign.maf_map import convert_prompt

        return convert_prompt(found)


FORMAT = MafFormat()
