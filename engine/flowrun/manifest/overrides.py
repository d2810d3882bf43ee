"""`--set PATH=VALUE`: change any manifest value for one run, checked like the YAML.

    --set agents.worker.max_steps=5          a key of an agent (the effective one, extends resolved)
    --set agents.worker.prompt='You ...'     its prompt (replaces a prompt_file, as `extends` does)
    --set agents.instructor.tools.worker.max_calls=3   a list entry by its name (or its index: tools.6)
    --set tools.web_search.parameters.properties.max_results.default=3
    --set models.claude.model=claude-opus-4-1  a workflow model (or a models.d one, copied into it)
    --set limits.max_total_steps=50          any other path is a key of the workflow itself

VALUE is read as YAML (`5` is a number, `true` a boolean, `[a, b]` a list, anything else a
string). The changed manifest goes through the same checks as a file (JSON Schema, the rules
across keys, the typed specs, then the cross-references), and a problem under a changed path is
reported against the `--set` that made it (`--set agents.worker.max_steps=many: error[...]`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from flowrun.errors import UsageError
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.project import Loaded, Project
from flowrun.manifest.schema.check import check_schema, did_you_mean
from flowrun.manifest.semantics import problems
from flowrun.manifest.specs import Strict, WorkflowManifest
from flowrun.manifest.yaml_source import PathKey, Source

HINT = "write --set PATH=VALUE, e.g. --set agents.worker.max_steps=5"
PROMPT_KEYS: dict[tuple[str, ...], str] = {("prompt",): "prompt_file", ("prompt_file",): "prompt"}


@dataclass(frozen=True, slots=True)
class Override:
    path: tuple[str, ...]
    value: object
    text: str  # as the user wrote it, for messages

    @property
    def label(self) -> str:
        return f"--set {self.text}"


def parse_overrides(given: Mapping[str, object] | Iterable[str] | None) -> list[Override]:
    """`PATH=VALUE` strings (VALUE read as YAML), or a mapping of path to Python value."""
    if given is None:
        return []
    if isinstance(given, Mapping):
        return [_override(str(path), value, f"{path}={_as_yaml(value)}") for path, value in given.items()]
    return [parse_override(text) for text in given]


def _as_yaml(value: object) -> str:
    """A value as the YAML text `--set` reads back as the same value (run.json records the
    texts, and a resume reads them again); repr for what YAML cannot hold."""
    import yaml

    try:
        text = yaml.safe_dump(value, default_flow_style=True, width=float("inf"), allow_unicode=True)
    except yaml.YAMLError:
        return repr(value)
    return text.removesuffix("\n").removesuffix("\n...")


def parse_override(text: str) -> Override:
    path, eq, raw = text.partition("=")
    if not eq or not path.strip():
        raise UsageError(f"--set {text!r} is not PATH=VALUE", HINT)
    import yaml

    from flowrun.yaml_scan import Loader, scan_events

    refusal = scan_events(raw)  # (a value nested thousands deep would break the parser's stack)
    if refusal is not None:
        raise UsageError(f"--set {text}: {refusal.message}", refusal.hint)
    try:
        value = yaml.load(raw, Loader=Loader) if raw.strip() else ""
    except yaml.YAMLError as e:
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise UsageError(f"--set {text}: the value is not valid YAML ({problem})", "quote it") from None
    return _override(path.strip(), value, text)


def _override(path: str, value: object, text: str) -> Override:
    parts = path.split(".")
    if any(not p for p in parts):
        raise UsageError(f"--set {text}: empty part in the path {path!r}", HINT)
    if parts[0] in ("agents", "tools") and len(parts) < 3:
        raise UsageError(f"--set {text}: name the {parts[0][:-1]} and a key, e.g. {parts[0]}.NAME.KEY", HINT)
    return Override(tuple(parts), value, text)


def apply_overrides(
    project: Project, workflow: Loaded[WorkflowManifest], overrides: list[Override]
) -> tuple[Loaded[WorkflowManifest], list[Diagnostic]]:
    """Apply the overrides to the project's effective agents and tools and to the workflow; the
    changed manifests are checked again (their problems name the --set). Returns the workflow
    (changed or not) and the problems."""
    groups: dict[tuple[str, str], list[Override]] = {}
    out: list[Diagnostic] = []
    for item in overrides:
        target, problem = _target(project, workflow, item)
        if problem is not None:
            out.append(problem)
        elif target is not None:
            groups.setdefault(target, []).append(item)
    shared = {n: m.spec.model_dump(mode="json", exclude_unset=True) for n, m in project.models.items()}
    for (kind, name), items in groups.items():
        if kind == "workflow":
            changed, found = _changed(workflow, "workflow", items, shared)
            out += found
            if changed is not None:
                project.workflows = [changed if w is workflow else w for w in project.workflows]
                workflow = changed
            continue
        table: dict[str, Any] = project.agents if kind == "agent" else project.tools
        changed_spec, found = _changed(table[name], kind, items, shared)
        out += found
        if changed_spec is not None:
            table[name] = changed_spec
    return workflow, out


def _target(
    project: Project, workflow: Loaded[WorkflowManifest], item: Override
) -> tuple[tuple[str, str] | None, Diagnostic | None]:
    """(kind, name) the override changes, or a diagnostic for an unknown agent or tool."""
    head = item.path[0]
    if head in ("agents", "tools"):
        table: Mapping[str, object] = project.agents if head == "agents" else project.tools
        name = item.path[1]
        if name in table:
            return (head[:-1], name), None
        kind = head[:-1]
        hint = did_you_mean(name, set(table)) or f"known {head}: " + ", ".join(sorted(table))
        return None, Diagnostic(item.label, 0, 0, "", f"unknown {kind} '{name}'", hint, f"unknown-{kind}")
    return ("workflow", ""), None


def _changed(
    loaded: Loaded[Any], kind: str, items: list[Override], shared: Mapping[str, Mapping[str, object]]
) -> tuple[Loaded[Any] | None, list[Diagnostic]]:
    """The manifest with `items` applied and checked; None (and the problems) when it is not valid."""
    data = loaded.spec.model_dump(mode="json", by_alias=True, exclude_unset=True)
    data["kind"] = kind
    labels: dict[PathKey, str] = {}
    for item in items:
        path = item.path[2:] if kind != "workflow" else item.path
        if kind == "workflow" and path[0] == "models" and len(path) > 2:
            # a models.d model: the workflow gets its own copy, changed
            models = data.setdefault("models", {})
            if path[1] not in models and path[1] in shared:
                models[path[1]] = dict(shared[path[1]])
        _set(data, path, item.value, item.label)
        if kind == "agent" and path in PROMPT_KEYS:  # one prompt replaces the other, as with extends
            data.pop(PROMPT_KEYS[path], None)
        labels[tuple(_keys(data, path))] = item.label
    src = _OverriddenSource(
        path=loaded.source.path,
        display=loaded.source.display,
        data=data,
        values=loaded.source.values,
        keys=loaded.source.keys,
        text=loaded.source.text,
        remap=loaded.source.remap,
        labels=labels,
    )
    found = check_schema(src, kind)
    if not found:
        found = problems(kind, src)
    if found:
        return None, found
    from flowrun.manifest.project import typed_spec

    spec, typed = typed_spec(kind, src, data)
    if spec is None:
        return None, typed
    assert isinstance(spec, Strict)
    return dataclasses.replace(loaded, spec=spec, source=src, builtin=False), []


def _keys(data: object, path: tuple[str, ...]) -> list[str | int]:
    """The path with list indices as ints (as diagnostics name them); an entry named in a list
    is its index, then its name."""
    out: list[str | int] = []
    node: object = data
    for part in path:
        if (
            isinstance(node, list)
            and not part.lstrip("-").isdigit()
            and (at := _entry(node, part)) is not None
        ):
            out += [at, part]
            entry = node[at]
            node = entry.get(part) if isinstance(entry, dict) else None
            continue
        key: str | int = int(part) if isinstance(node, list) and part.lstrip("-").isdigit() else part
        out.append(key)
        node = node[key] if isinstance(node, list | dict) and _has(node, key) else None  # type: ignore[index]
    return out


def _entry(node: list[object], name: str) -> int | None:
    """The index of the list entry named `name`: the string itself, or a mapping with that one
    key (a tool entry with its config: `- worker: {max_calls: 8}`)."""
    for i, entry in enumerate(node):
        if entry == name or (isinstance(entry, dict) and list(entry) == [name]):
            return i
    return None


def _named_entry(node: list[Any], name: str, last: bool, value: object, label: str) -> Any:
    """`--set agents.x.tools.worker.max_calls=3`: the config of the entry named `name` (made a
    mapping when it was a bare name), or the entry replaced when the path ends there."""
    at = _entry(node, name)
    if at is None:
        names = [e if isinstance(e, str) else next(iter(e), "?") for e in node if isinstance(e, str | dict)]
        hint = did_you_mean(name, set(names)) or "its entries: " + (", ".join(names) or "(none)")
        raise UsageError(f"{label}: no entry {name!r} in that list", hint)
    if last:
        node[at] = {name: value}
        return None
    if not isinstance(node[at], dict) or not isinstance(node[at][name], dict):
        node[at] = {name: {}}
    return node[at][name]


def _has(node: object, key: str | int) -> bool:
    if isinstance(node, list):
        return isinstance(key, int) and -len(node) <= key < len(node)
    return isinstance(node, Mapping) and key in node


def _set(data: Mapping[str, object], path: tuple[str, ...], value: object, label: str) -> None:
    node: object = data
    for i, part in enumerate(path):
        last = i == len(path) - 1
        if isinstance(node, list):
            if not part.lstrip("-").isdigit():  # an entry by its name
                node = _named_entry(node, part, last, value, label)
                continue
            if not _has(node, int(part)):
                raise UsageError(f"{label}: {part!r} is not an index of that list ({len(node)} items)", HINT)
            index = int(part)
            if last:
                node[index] = value
            else:
                node = node[index]
            continue
        if not isinstance(node, dict):
            shown = ".".join(path[:i])
            raise UsageError(f"{label}: {shown} is a {type(node).__name__}, not a mapping or list", HINT)
        if last:
            node[part] = value
        else:
            if not isinstance(node.get(part), dict | list):
                node[part] = {}
            node = node[part]


@dataclass(slots=True)
class _OverriddenSource(Source):
    """A manifest's Source after --set: diagnostics under a changed path name the --set."""

    labels: dict[PathKey, str] = dataclasses.field(default_factory=dict)

    def diag(
        self,
        parts: PathKey,
        message: str,
        hint: str = "",
        code: str = "invalid",
        *,
        key: bool = False,
        severity: str = "error",
    ) -> Diagnostic:
        written = tuple(parts)
        for changed, label in self.labels.items():
            if written[: len(changed)] == changed or changed[: len(written)] == written:
                from flowrun.manifest.diagnostics import yaml_path

                return Diagnostic(label, 0, 0, yaml_path(written), message, hint, code, severity)  # type: ignore[arg-type]
        return Source.diag(self, parts, message, hint, code, key=key, severity=severity)
