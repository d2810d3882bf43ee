"""Oracle's Open Agent Specification (`component_type:` trees in YAML or JSON): recognised, so a
run, `validate` and `import` say in one line that flowrun does not read it yet, instead of
taking the file for something else."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from flowrun.manifest.foreign import sniff
from flowrun.manifest.foreign.registry import Detected, ForeignFormat

if TYPE_CHECKING:
    from flowrun.manifest.foreign.conversion import Conversion

SCHEMA_FILE = "agentspec_json_spec"  # the spec's own JSON Schema files are not agent files


class AgentSpecFormat(ForeignFormat):
    name = "agentspec"
    title = "Oracle Agent Spec"

    def detect(self, path: Path) -> Detected | None:
        if not path.is_file() or SCHEMA_FILE in path.name:
            return None
        text = sniff.head(path)
        keys = (
            sniff.json_keys(text) if sniff.is_json(path) or path.suffix == ".json5" else sniff.top_keys(text)
        )
        if "component_type" in keys and ("agentspec_version" in keys or "id" in keys):
            return Detected(self.name, path, path.parent)
        return None

    def convert(self, found: Detected) -> Conversion:
        from flowrun.manifest.diagnostics import Diagnostic
        from flowrun.manifest.foreign.conversion import Conversion
        from flowrun.paths import display_path

        conv = Conversion(self.name, found.entry, found.root)
        message = "an Oracle Agent Spec file: flowrun does not read Agent Spec yet"
        hint = "flowrun reads CrewAI, ADK, docker-agent, pydantic-ai and Microsoft Agent Framework files"
        conv.diagnostics.append(Diagnostic(display_path(found.entry), 1, 1, "", message, hint, "not-yet"))
        return conv


FORMAT = AgentSpecFormat()
