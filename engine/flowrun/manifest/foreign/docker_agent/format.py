"""docker-agent (formerly cagent) team files: one YAML file whose top-level `agents:` maps agent
names to their `model`, `instruction`, `toolsets`, `sub_agents` and `handoffs`; the `root` agent
answers the user. The file is its own project (the run's workflow path)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from flowrun.manifest.foreign import sniff
from flowrun.manifest.foreign.registry import Detected, ForeignFormat

if TYPE_CHECKING:
    from flowrun.manifest.foreign.conversion import Conversion

# an agent's keys, indented under `agents:` (what tells a team file from other YAML with `agents:`)
_AGENT_KEY = re.compile(r"^\s+(instruction|toolsets|sub_agents|handoffs|add_date|model)\s*:", re.MULTILINE)


def is_team_file(path: Path) -> bool:
    found = sniff.foreign_yaml(path)
    if found is None:
        return False
    text, keys = found
    if "agents" not in keys or keys & {"kind", "component_type", "agent_class", "tasks"}:
        return False
    return _AGENT_KEY.search(text) is not None


class DockerAgentFormat(ForeignFormat):
    name = "docker-agent"
    title = "docker-agent"

    def detect(self, path: Path) -> Detected | None:
        if path.is_file() and is_team_file(path):
            return Detected(self.name, path, path.parent)
        return None

    def convert(self, found: Detected) -> Conversion:
        from flowrun.manifest.foreign.docker_agent.team import convert_team

        return convert_team(found)


FORMAT = DockerAgentFormat()
