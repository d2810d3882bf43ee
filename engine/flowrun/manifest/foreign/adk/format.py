"""Google ADK Agent Config: a folder with `root_agent.yaml` (or any agent config file, which
stands for the project of the nearest `root_agent.yaml` above it), the YAML files it names by
`config_path`, and the user's Python functions it names as tools (read with `ast`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from flowrun.manifest.foreign import sniff
from flowrun.manifest.foreign.registry import Detected, ForeignFormat

if TYPE_CHECKING:
    from flowrun.manifest.foreign.conversion import Conversion

ROOT_FILE = "root_agent.yaml"
SCHEMA_MARK = "AgentConfig.json"  # the yaml-language-server line ADK's samples carry
ABOVE = 3  # folders above a sub-agent's file looked at for its root_agent.yaml


def is_agent_config(path: Path) -> bool:
    found = sniff.foreign_yaml(path)
    if found is None:
        return False
    text, keys = found
    if "agents" in keys or "kind" in keys or "component_type" in keys:
        return False
    return (
        SCHEMA_MARK in text
        or "agent_class" in keys
        or ("name" in keys and bool({"instruction", "sub_agents"} & keys))
    )


class AdkFormat(ForeignFormat):
    name = "adk"
    title = "ADK Agent Config"

    def detect(self, path: Path) -> Detected | None:
        if path.is_dir():
            root = path / ROOT_FILE
            return Detected(self.name, root, path) if is_agent_config(root) else None
        if not is_agent_config(path):
            return None
        if path.name != ROOT_FILE:
            for folder in list(path.parents)[:ABOVE]:
                if is_agent_config(folder / ROOT_FILE):
                    return Detected(self.name, folder / ROOT_FILE, folder)
        return Detected(self.name, path, path.parent)

    def parts(self, folder: Path) -> set[Path]:
        return (
            {p for p in folder.iterdir() if p.name != ROOT_FILE and is_agent_config(p)}
            if is_agent_config(folder / ROOT_FILE)
            else set()
        )

    def convert(self, found: Detected) -> Conversion:
        from flowrun.manifest.foreign.adk.build import Build, collect_state
        from flowrun.manifest.foreign.adk.steps import workflow
        from flowrun.manifest.foreign.adk.tree import Tree
        from flowrun.manifest.foreign.conversion import Conversion

        conv = Conversion(self.name, found.entry, found.root)
        tree = Tree(conv)
        root = tree.load(found.entry)
        if root is None:
            return conv
        build = Build(tree, root)
        collect_state(build)
        data = workflow(build)
        for draft in build.agents.values():
            conv.add("agent", draft.data, draft.src, (), draft.where)
        if data["steps"]:
            conv.add("workflow", data, root.src, (), {("steps",): ("sub_agents",)})
        return conv


FORMAT = AdkFormat()
