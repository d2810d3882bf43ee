"""`extends:` for agents: the child's keys over the parent's. A key the child sets replaces the
parent's whole, except the two lists written as changes: `tools: {add: [...], remove: [...]}`
and `selectable_models: {add: [...], remove: [...]}`. Problems (removing what the parent does
not have) are diagnostics at the line of the `remove` entry."""

from __future__ import annotations

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.schema.check import did_you_mean
from flowrun.manifest.specs import AgentManifest, ModelsPatch, ToolsPatch
from flowrun.manifest.yaml_source import PathKey, Source

LIST_KEYS = ("tools", "selectable_models")


def entry_name(entry: object) -> str:
    """A tool entry's name (`read_file` or `{write_file: {...}}`), or a model reference."""
    return str(next(iter(entry))) if isinstance(entry, dict) else str(entry)


def extended(
    parent: AgentManifest, child: AgentManifest, src: Source | None = None
) -> tuple[AgentManifest, dict[PathKey, PathKey], list[Diagnostic]]:
    """(the effective manifest, where its list entries are written in the child's file, problems).
    A child prompt replaces either kind of parent prompt."""
    data = parent.model_dump(exclude_unset=True, by_alias=True)
    own = child.model_dump(exclude_unset=True, by_alias=True)
    remap: dict[PathKey, PathKey] = {}
    problems: list[Diagnostic] = []
    for key in LIST_KEYS:
        inherited = [*parent.model_dump(by_alias=True)[key]]
        patch = getattr(child, key)
        if key not in child.model_fields_set:
            remap.update({(key, i): ("extends",) for i in range(len(inherited))})
        elif isinstance(patch, ToolsPatch | ModelsPatch):
            merged, where, found = merge(key, inherited, patch, child.name, src)
            own[key] = merged
            remap.update(where)
            problems += found
    data.update(own)
    if "prompt" in child.model_fields_set:
        data.pop("prompt_file", None)
    elif "prompt_file" in child.model_fields_set:
        data.pop("prompt", None)
    data.pop("extends", None)
    return AgentManifest.model_validate(data), remap, problems


def merge(
    key: str, inherited: list[object], patch: ToolsPatch | ModelsPatch, agent: str, src: Source | None
) -> tuple[list[object], dict[PathKey, PathKey], list[Diagnostic]]:
    """The parent's list minus `remove`, then `add`: an added entry whose name is already there
    replaces it in place, any other is appended."""
    names = [entry_name(e) for e in inherited]
    problems: list[Diagnostic] = []
    for j, name in enumerate(patch.remove):
        if name not in names and src is not None:
            what = "tools" if key == "tools" else "selectable models"
            hint = did_you_mean(name, set(names)) or f"it inherits: {', '.join(names) or '(none)'}"
            message = f"cannot remove '{name}': it is not among the {what} '{agent}' inherits"
            problems.append(src.diag((key, "remove", j), message, hint, "bad-remove"))
    inherit: PathKey = ("extends",)
    kept: list[tuple[object, PathKey]] = [
        (e, inherit) for e in inherited if entry_name(e) not in patch.remove
    ]
    for j, entry in enumerate(list(patch.add)):
        written: PathKey = (key, "add", j)
        at = next(
            (i for i, (e, w) in enumerate(kept) if w == inherit and entry_name(e) == entry_name(entry)), None
        )
        if at is None:
            kept.append((entry, written))  # a name added twice stays twice: validate reports it
        else:
            kept[at] = (entry, written)
    merged = [e for e, _ in kept]
    remap: dict[PathKey, PathKey] = {(key, i): where for i, (_, where) in enumerate(kept)}
    return merged, remap, problems
