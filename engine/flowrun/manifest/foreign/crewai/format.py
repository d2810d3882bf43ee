"""CrewAI crews, in both of CrewAI's shapes: `config/agents.yaml` + `config/tasks.yaml` with the
project's `crew.py` (read with `ast`, never run), and the JSON-first `crew.jsonc` +
`agents/<id>.jsonc` of CrewAI 1.15. A crew is found from its folder, its config folder or
any of those files; the run's workflow file is `config/tasks.yaml` or `crew.jsonc`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from flowrun.manifest.foreign import sniff
from flowrun.manifest.foreign.registry import Detected, ForeignFormat

if TYPE_CHECKING:
    from flowrun.manifest.foreign.conversion import Conversion

CREW_FILES = ("crew.jsonc", "crew.json")
AGENT_FILES = ("agents.yaml", "agents.yml")
TASK_FILES = ("tasks.yaml", "tasks.yml")


def config_files(config: Path) -> tuple[Path, Path] | None:
    """(agents, tasks) of a CrewAI config folder, or None when one is missing."""
    agents = next((config / n for n in AGENT_FILES if (config / n).is_file()), None)
    tasks = next((config / n for n in TASK_FILES if (config / n).is_file()), None)
    return (agents, tasks) if agents is not None and tasks is not None else None


def is_crew_json(path: Path) -> bool:
    if path.name not in CREW_FILES:
        return False
    keys = sniff.json_keys(sniff.head(path))
    return {"agents", "tasks"} <= keys and "component_type" not in keys


class CrewAIFormat(ForeignFormat):
    name = "crewai"
    title = "CrewAI"

    def detect(self, path: Path) -> Detected | None:
        if path.is_dir():
            crew = next((path / n for n in CREW_FILES if is_crew_json(path / n)), None)
            if crew is not None:
                return Detected(self.name, crew, path)
            for config, root in ((path / "config", path), (path, path.parent)):
                found = config_files(config) if config.name == "config" else None
                if found is not None:
                    return Detected(self.name, found[1], root)
            return None
        if is_crew_json(path):
            return Detected(self.name, path, path.parent)
        if path.name in (*AGENT_FILES, *TASK_FILES) and path.parent.name == "config":
            found = config_files(path.parent)
            if found is not None:
                return Detected(self.name, found[1], path.parent.parent)
        return None

    def parts(self, folder: Path) -> set[Path]:
        found = config_files(folder) if folder.name == "config" else None
        return set(found) if found else set()

    def convert(self, found: Detected) -> Conversion:
        from flowrun.manifest.foreign.crewai.loading import load_crew
        from flowrun.manifest.foreign.crewai.workflow import crew_workflow

        crew, conv = load_crew(found)
        if crew is not None:
            crew_workflow(crew, conv)
        return conv


FORMAT = CrewAIFormat()
