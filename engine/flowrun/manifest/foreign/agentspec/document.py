"""An Agent Spec file read as its tree of components, each with where it is written: a component
is a mapping with `component_type`; `{$component_ref: ID}` names one kept under
`$referenced_components` in the same component or one around it, or in another file of the
folder that holds only `$referenced_components` (the spec's "disaggregated" configs)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from flowrun.manifest.foreign import jsonc, sniff
from flowrun.manifest.foreign.conversion import Conversion, Items, Map, Value
from flowrun.manifest.foreign.jsonc import load_jsonc
from flowrun.manifest.yaml_source import PathKey, Source, load_source
from flowrun.paths import display_path

FLOWRUN_META = "flowrun"  # metadata key where `flowrun export` keeps what Agent Spec cannot say
REF = "$component_ref"
REFERENCED = "$referenced_components"
SUFFIXES = (".yaml", ".yml", ".json", ".jsonc", ".json5")
_REFERENCED_KEY = re.compile(r"^\$referenced_components\s*:", re.MULTILINE)


@dataclass(frozen=True)
class Comp:
    """One component: its data and where it is written."""

    data: Map
    src: Source
    path: PathKey
    scopes: tuple[tuple[PathKey, Map], ...] = ()  # `$referenced_components` around it

    @property
    def type(self) -> str:
        return str(self.data.get("component_type", ""))

    @property
    def name(self) -> str:
        name = self.data.get("name")
        return name if isinstance(name, str) and name.strip() else str(self.data.get("id", self.type))

    def get(self, key: str, default: Value = None) -> Value:
        return self.data.get(key, default)

    def at(self, *keys: str | int) -> PathKey:
        return (*self.path, *keys)


def flowrun_meta(comp: Comp) -> Map:
    """What `flowrun export` kept in the component's metadata."""
    meta = comp.get("metadata")
    found = meta.get(FLOWRUN_META) if isinstance(meta, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def read_file(path: Path) -> tuple[Source, Items]:
    """The file as a Source (JSON or YAML, with positions) and its problems."""
    display = display_path(path)
    if sniff.is_json(path) or path.suffix == ".json5":
        return load_jsonc(path, display)
    src, problems = load_source(path, display)
    return src, list(problems)


@dataclass
class Document:
    """The components of one file, references resolved on demand."""

    conv: Conversion
    root: Comp
    extra: dict[str, Comp] = field(default_factory=dict)  # components of other files, by id
    resolving: list[str] = field(default_factory=list)

    def child(self, owner: Comp, key: str | int, *more: str | int) -> Comp | None:
        """The component at `owner.key[.more]`, a reference followed; None (with a problem when
        it is a missing reference) when there is none."""
        value: Value = owner.data.get(key) if isinstance(key, str) else None
        for part in more:
            value = value[part] if isinstance(value, list | dict) and _has(value, part) else None  # type: ignore[index]
        return self.comp(owner, value, owner.at(key, *more))

    def comp(self, owner: Comp, value: Value, where: PathKey) -> Comp | None:
        if not isinstance(value, Mapping):
            return None
        scopes = _scopes(owner, value, where)
        if REF not in value:
            return Comp(value, owner.src, where, scopes) if "component_type" in value else None
        ref = str(value[REF])
        for scope_path, table in reversed(scopes):
            found = table.get(ref)
            if isinstance(found, Mapping):
                return Comp(found, owner.src, (*scope_path, REFERENCED, ref), scopes)
        if ref in self.extra:
            return self.extra[ref]
        message = f"the component '{ref}' is not in this file"
        hint = f"add it under `{REFERENCED}`, or in a file of this folder that holds only `{REFERENCED}`"
        self.conv.problem(owner.src, (*where, REF), message, hint, "missing-reference")
        return None

    def children(self, owner: Comp, key: str) -> list[tuple[int, Comp]]:
        """The components listed at `owner.key`, with their index."""
        items = owner.get(key)
        if not isinstance(items, list):
            return []
        out: list[tuple[int, Comp]] = []
        for i, item in enumerate(items):
            found = self.comp(owner, item, owner.at(key, i))
            if found is not None:
                out.append((i, found))
        return out


def _has(value: Items | Map, part: str | int) -> bool:
    if isinstance(value, list):
        return isinstance(part, int) and 0 <= part < len(value)
    return part in value


def _scopes(owner: Comp, value: Map, where: PathKey) -> tuple[tuple[PathKey, Map], ...]:
    scopes = owner.scopes
    own = owner.data.get(REFERENCED)
    if isinstance(own, Mapping) and not any(p == owner.path for p, _ in scopes):
        scopes = (*scopes, (owner.path, own))
    inner = value.get(REFERENCED)
    if isinstance(inner, Mapping):
        scopes = (*scopes, (where, inner))
    return scopes


def is_component_file(path: Path) -> bool:
    """A file whose top level is a component (not only `$referenced_components`)."""
    if path.suffix not in SUFFIXES or not path.is_file() or "agentspec_json_spec" in path.name:
        return False
    text = sniff.head(path)
    keys = sniff.top_keys(text) if sniff.is_yaml(path) else sniff.json_keys(text)
    if "component_type" in keys and ("agentspec_version" in keys or "id" in keys):
        return True
    return is_referenced_file(path)


def is_referenced_file(path: Path) -> bool:
    """A file of components that other files of the folder name (`$referenced_components` only)."""
    if path.suffix not in SUFFIXES or not path.is_file():
        return False
    text = sniff.head(path)
    if sniff.is_yaml(path):
        return bool(_REFERENCED_KEY.search(text)) and "component_type" not in sniff.top_keys(text)
    try:
        data = json.loads(jsonc.blank_comments(text)[0])
    except (ValueError, RecursionError):  # not JSON, or nested past the parser
        return False
    return isinstance(data, dict) and REFERENCED in data and "component_type" not in data


RUNNABLE = ("Agent", "Flow", "ManagerWorkers", "Swarm", "A2AAgent")
_RUNNABLE_TEXT = re.compile(r"component_type\W+(" + "|".join(RUNNABLE) + r")\b")


def has_runnable(path: Path) -> bool:
    """The file names an agent or a flow (cheap: its first bytes)."""
    return bool(_RUNNABLE_TEXT.search(sniff.head(path)))


def load(conv: Conversion, path: Path) -> Document | None:
    """The document of `path`, with the components of the folder's reference files. A file of
    referenced components only stands for the one agent or flow in it that none of its other
    components names."""
    conv.read(path)
    src, problems = read_file(path)
    conv.diagnostics += problems
    if src.data is None or problems:
        return None
    if not isinstance(src.data, Mapping) or not ("component_type" in src.data or REFERENCED in src.data):
        conv.problem(src, (), "an Agent Spec file is one component: a mapping with `component_type`")
        return None
    root = Comp(src.data, src, ()) if "component_type" in src.data else _top_of_library(conv, src)
    if root is None:
        return None
    doc = Document(conv, root)
    for other in sorted(path.parent.iterdir()):
        if other != path and is_referenced_file(other):
            doc.extra |= _referenced(conv, other)
    return doc


def _top_of_library(conv: Conversion, src: Source) -> Comp | None:
    table = src.data[REFERENCED]
    if not isinstance(table, Mapping):
        return None
    named = set(re.findall(r"\$component_ref\W+([^\s\"'}]+)", src.text))
    tops = [
        str(k)
        for k, v in table.items()
        if isinstance(v, Mapping) and v.get("component_type") in RUNNABLE and str(k) not in named
    ]
    if len(tops) != 1:
        found = ", ".join(tops) or "none"
        message = (
            f"a file of referenced components only, with {len(tops)} agents or flows "
            f"that nothing names ({found})"
        )
        conv.problem(
            src,
            (REFERENCED,),
            message,
            "flowrun runs one top component: put it at the file's top level",
            "no-root",
            key=True,
        )
        return None
    return Comp(table[tops[0]], src, (REFERENCED, tops[0]), (((), table),))


def _referenced(conv: Conversion, path: Path) -> dict[str, Comp]:
    src, problems = read_file(path)
    if problems or not isinstance(src.data, Mapping):
        return {}
    table = src.data.get(REFERENCED)
    if not isinstance(table, Mapping):
        return {}
    conv.read(path)
    scope = (((), table),)
    return {
        str(key): Comp(value, src, (REFERENCED, key), scope)
        for key, value in table.items()
        if isinstance(value, Mapping)
    }
