"""An ADK Agent Config project read as its tree of agents: `root_agent.yaml` and every file its
`sub_agents` and `AgentTool`s name by `config_path` (relative to the file that names it), each
agent with its file's positions. A `code:` reference or a Python agent class is the project's
own Python, which flowrun does not run: an error at its line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from flowrun.manifest.foreign.conversion import Conversion, flowrun_name
from flowrun.manifest.foreign.keys import mapping
from flowrun.manifest.yaml_source import PathKey, Source, load_source
from flowrun.paths import display_path

LLM, SEQUENTIAL, PARALLEL, LOOP = "LlmAgent", "SequentialAgent", "ParallelAgent", "LoopAgent"
CLASSES = (LLM, SEQUENTIAL, PARALLEL, LOOP)
ALIASES = {"Agent": LLM, "google.adk.agents.LlmAgent": LLM, "google.adk.agents.Agent": LLM}


@dataclass
class Node:
    """One agent of the tree."""

    cls: str
    name: str  # flowrun's name for it
    data: Mapping[str, object]
    src: Source
    children: list[Node] = field(default_factory=list)  # `sub_agents`, in order
    parent: Node | None = None

    def value(self, key: str, default: object = None) -> object:
        return self.data.get(key, default)

    @property
    def ancestors(self) -> list[Node]:
        out, node = [], self.parent
        while node is not None:
            out.append(node)
            node = node.parent
        return out


@dataclass
class Tree:
    conv: Conversion
    nodes: dict[Path, Node] = field(default_factory=dict)  # by file
    names: dict[str, Path] = field(default_factory=dict)  # flowrun name -> its file
    loading: list[Path] = field(default_factory=list)  # the files being read, outermost first

    def load(self, path: Path, src: Source | None = None, where: PathKey = ()) -> Node | None:
        """The agent of `path` and its sub-agents (each file read once); problems at `where`
        in `src` (the file that names it) when it cannot be read."""
        path = path.resolve()
        if path in self.loading:
            if src is not None:
                self.conv.problem(
                    src,
                    where,
                    f"{path.name} names itself through its sub-agents",
                    "an agent has one parent",
                    "agent-cycle",
                )
            return None
        if path in self.nodes:
            return self.nodes[path]
        if not path.is_file():
            if src is not None:
                self.conv.problem(
                    src,
                    where,
                    f"config_path {path.name} does not exist",
                    "the path is relative to this file's folder",
                    "missing-file",
                )
            return None
        self.loading.append(path)
        try:
            return self._read(path)
        finally:
            self.loading.pop()

    def _read(self, path: Path) -> Node | None:
        self.conv.read(path)
        src, problems = load_source(path, display_path(path))
        self.conv.diagnostics += problems
        if src.data is None or problems:
            return None
        data = mapping(self.conv, src, (), src.data, "an ADK agent config")
        cls = _class(self.conv, src, data)
        raw_name = data.get("name")
        if not isinstance(raw_name, str) or not raw_name.strip():
            self.conv.problem(src, (), "an ADK agent needs a `name`", "add `name:`", "missing-key")
            return None
        if cls is None:
            return None
        name = flowrun_name(raw_name)
        if name in self.names and self.names[name] != path:
            other = display_path(self.names[name])
            self.conv.problem(
                src,
                ("name",),
                f"two agents are named '{raw_name}' (also {other})",
                "ADK agent names are unique in a tree",
                "duplicate-name",
            )
            return None
        self.names[name] = path
        node = Node(cls, name, data, src)
        self.nodes[path] = node
        node.children = [child for child in self._children(node, path) if child is not None]
        for child in node.children:
            child.parent = child.parent or node
        return node

    def _children(self, node: Node, path: Path) -> list[Node | None]:
        refs = node.data.get("sub_agents")
        if refs is None:
            return []
        if not isinstance(refs, list):
            self.conv.problem(
                node.src,
                ("sub_agents",),
                "`sub_agents` must be a list of {config_path: ...}",
                "",
                "wrong-type",
            )
            return []
        return [self.ref(ref, node.src, ("sub_agents", i), path.parent) for i, ref in enumerate(refs)]

    def ref(self, ref: object, src: Source, where: PathKey, folder: Path) -> Node | None:
        """An agent reference `{config_path: FILE}`; `{code: dotted}` is refused."""
        if isinstance(ref, Mapping) and isinstance(ref.get("config_path"), str):
            return self.load(folder / str(ref["config_path"]), src, (*where, "config_path"))
        if isinstance(ref, Mapping) and "code" in ref:
            message = f"sub-agent {ref['code']!r} is an agent built in Python, which flowrun does not run"
            hint = "write that agent as a YAML config and name it with `config_path:`"
            self.conv.note(src, where, "refused: an agent defined in Python", "dropped")
            self.conv.problem(src, (*where, "code"), message, hint, "python-agent")
            return None
        self.conv.problem(src, where, "an agent reference is {config_path: FILE}", "", "wrong-type")
        return None


def _class(conv: Conversion, src: Source, data: Mapping[str, object]) -> str | None:
    cls = data.get("agent_class", LLM)
    cls = ALIASES.get(str(cls), cls)
    if cls in CLASSES:
        return str(cls)
    if cls == "GraphAgent":
        message = (
            "agent_class GraphAgent (nodes and edges with Python conditions) is not released ADK; "
            "flowrun does not read it"
        )
        conv.problem(
            src, ("agent_class",), message, "write the graph as a SequentialAgent or LoopAgent", "unsupported"
        )
    else:
        message = f"agent_class {cls!r} is a Python class, which flowrun does not run"
        hint = "one of " + ", ".join(CLASSES)
        conv.problem(src, ("agent_class",), message, hint, "python-agent")
    conv.note(src, ("agent_class",), f"refused: {cls}", "dropped")
    return None
