"""A CrewAI crew as its files define it, whatever their shape (`config/*.yaml` with `crew.py`,
or `crew.jsonc` with `agents/*.jsonc`): its agents, its tasks in the order they run and the
crew's own settings, each value with the file and place it was written."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from flowrun.manifest.yaml_source import PathKey, Source

if TYPE_CHECKING:
    from flowrun.manifest.foreign.conversion import Conversion
    from flowrun.manifest.foreign.crewai.code import CrewCode


def config_key(method: str, kwargs: Mapping[str, object]) -> str:
    """The YAML key a crew.py method's `config=self.agents_config['key']` names (else its own name)."""
    config = kwargs.get("config")
    return str(config["config"]) if isinstance(config, dict) and "config" in config else method


@dataclass(slots=True)
class Part:
    """Keys of one object as one file writes them: `data` found at `base` in `src`."""

    data: Mapping[str, object]
    src: Source
    base: PathKey

    def at(self, *keys: str | int) -> PathKey:
        return (*self.base, *keys)


@dataclass(slots=True)
class Found:
    """A key's value and the part that wrote it."""

    value: object
    part: Part
    key: str

    @property
    def where(self) -> PathKey:
        return self.part.at(self.key)

    @property
    def src(self) -> Source:
        return self.part.src


@dataclass
class Layers:
    """An agent, a task or the crew: its parts, the first that has a key wins (keyword
    arguments in crew.py over the YAML config, an agent file's keys over its `settings`)."""

    key: str
    parts: list[Part] = field(default_factory=list)

    def find(self, key: str) -> Found | None:
        for part in self.parts:
            if key in part.data:
                return Found(part.data[key], part, key)
        return None

    def value(self, key: str, default: object = None) -> object:
        found = self.find(key)
        return default if found is None else found.value

    def keys(self) -> list[str]:
        return list(dict.fromkeys(k for part in self.parts for k in part.data))

    def texts(self, conv: Conversion, keys: tuple[str, ...], what: str) -> dict[str, str] | None:
        """The non-empty texts of `keys`, or None after one error: the keys it lacks, or, when
        crew.py names a config entry the YAML does not define, that entry (CrewAI: a KeyError)."""
        found = {k: v for k in keys if isinstance(v := self.value(k), str) and v.strip()}
        if len(found) == len(keys):
            return {k: v.strip() for k, v in found.items()}
        main, named_by = self.parts[-1], self.parts[0]
        if not main.data and named_by is not main and main.src.display.endswith((".yaml", ".yml")):
            file = "/".join(Path(main.src.display).parts[-2:])  # config/agents.yaml
            message = f"crew.py reads CrewAI {what} '{self.key}' from {file}, which does not define it"
            hint = f"add `{self.key}:` with {', '.join(keys)} to {file}, or fix the name in crew.py"
            conv.problem(named_by.src, named_by.at("config"), message, hint, "missing-key")
            return None
        missing = ", ".join(f"`{k}`" for k in keys if k not in found)
        message = f"CrewAI {what} '{self.key}' has no {missing}"
        hint = f"add {missing} (CrewAI needs {' and '.join(f'`{k}`' for k in keys)})"
        conv.problem(main.src, main.base, message, hint, "missing-key")
        return None

    @property
    def main(self) -> Part:
        """The part that defines it (its config), for where to point when a key is missing."""
        return self.parts[-1]


@dataclass
class Crew:
    name: str
    shape: str  # "yaml" (config/*.yaml, crew.py) or "json" (crew.jsonc)
    agents: dict[str, Layers] = field(default_factory=dict)
    tasks: list[Layers] = field(default_factory=list)
    settings: Layers = field(default_factory=lambda: Layers("crew"))
    manager: Layers | None = None  # `manager_agent`: an agent that is not one of `agents`
    code: CrewCode | None = None
