"""An Agent Spec file checked against the spec's own JSON Schema (26.2.0, shipped here with its
licence: NOTICE.md), each problem at its line and column. The schema says "one of these
components" everywhere (`anyOf` of every component type, or a `$component_ref`); of such a
choice, the problem reported is the one inside the branch the value's own `component_type`
picks, so a misspelt key of an LlmNode is reported as that, not as "matches no component"."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.foreign.conversion import Doc, Map, Value
from flowrun.manifest.schema.check import did_you_mean, likeliest_error
from flowrun.manifest.yaml_source import Source

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, ValidationError

SCHEMA_FILE = Path(__file__).with_name("agentspec_json_spec_26_2_0.json")
SCHEMA_VERSION = "26.2.0"
VERSION_KEY = "agentspec_version"


@cache
def schema() -> Doc:
    loaded: Doc = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return loaded


@cache
def _validator(component_type: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    whole = schema()
    defs = whole["$defs"]
    own = f"Versioned{component_type}"
    root = {"$ref": f"#/$defs/{own}"} if own in defs else {"anyOf": whole["anyOf"]}
    return Draft202012Validator({**root, "$defs": defs})


def component_types() -> set[str]:
    return {name.removeprefix("Base") for name in schema()["$defs"] if name.startswith("Base")}


def problems(data: Value, src: Source, what: str = "Agent Spec") -> list[Diagnostic]:
    """What the schema refuses in `data` (a whole file), at positions of `src`."""
    kind = str(data.get("component_type", "")) if isinstance(data, Mapping) else ""
    out = _versions(data, (), src, what)
    for err in _validator(kind).iter_errors(without_versions(data)):
        out += _diagnostics(_unknown_kind(err) or likeliest_error(err, _refuses_kind), src, what)
    return out


def without_versions(data: Value) -> Value:
    """`data` without its `agentspec_version` keys. The schema's components forbid keys they do
    not list, and list no version, so it refuses every file that says its version (as every
    file pyagentspec writes does): the version is checked on its own (_versions)."""
    if isinstance(data, Mapping):
        return {k: without_versions(v) for k, v in data.items() if k != VERSION_KEY}
    if isinstance(data, list):
        return [without_versions(v) for v in data]
    return data


def _versions(data: Value, path: tuple[Value, ...], src: Source, what: str) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    if isinstance(data, Mapping):
        known = schema()["$defs"]["AgentSpecVersionEnum"]["enum"]
        version = data.get(VERSION_KEY)
        if VERSION_KEY in data and version not in known:
            message = f"{what}'s schema: agentspec_version {version!r} is not one of {', '.join(known)}"
            out.append(src.diag((*path, VERSION_KEY), message, "", "schema"))
        for key, value in data.items():
            out += _versions(value, (*path, key), src, what)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            out += _versions(value, (*path, i), src, what)
    return out


def _diagnostics(err: ValidationError, src: Source, what: str) -> list[Diagnostic]:
    path = tuple(err.absolute_path)
    kind = err.instance.get("component_type") if isinstance(err.instance, Mapping) else None
    if isinstance(kind, str) and kind not in component_types():
        message = f"component_type '{kind}' is not a component of {what} {SCHEMA_VERSION}"
        hint = did_you_mean(kind, component_types()) or "a plugin's component: flowrun reads the spec's own"
        return [src.diag((*path, "component_type"), message, hint, "unknown-component")]
    if err.validator == "additionalProperties" and isinstance(err.instance, Mapping):
        known = set(_own(err).get("properties", {}))
        out = []
        for key in sorted(set(err.instance) - known, key=str):
            hint = did_you_mean(str(key), known) or "known keys: " + ", ".join(sorted(known))
            kind = err.instance.get("component_type", "this component")
            message = f"unknown key '{key}' ({what}'s schema has no such key in {kind})"
            out.append(src.diag((*path, key), message, hint, "unknown-key", key=True))
        return out
    message = " ".join(str(err.message).split())
    if len(message) > 200:
        message = message[:197] + "..."
    return [src.diag(path, f"{what}'s schema: {message}", "", "schema")]


def _unknown_kind(err: ValidationError) -> ValidationError | None:
    """The deepest error about a component whose component_type the spec does not have."""
    found = None
    for sub in [err, *(err.context or [])]:
        kind = sub.instance.get("component_type") if isinstance(sub.instance, Mapping) else None
        if isinstance(kind, str) and kind not in component_types():
            if found is None or len(sub.absolute_path) > len(found.absolute_path):
                found = sub
        elif sub is not err and sub.context:
            deeper = _unknown_kind(sub)
            if deeper is not None and (found is None or len(deeper.absolute_path) > len(found.absolute_path)):
                found = deeper
    return found


def _refuses_kind(err: ValidationError, instance: object) -> bool:
    """`err` says its branch of a choice of components is another component type than the
    value's `component_type` (or a reference where there is none): the branch it picks is
    the likeliest (manifest/schema/check.py)."""
    if not isinstance(instance, Mapping):
        return False
    path = list(err.relative_path)
    if path[:1] == ["component_type"] and err.validator in ("const", "enum"):
        return True
    if err.validator == "required" and "$component_ref" in str(err.message):
        return True
    if (
        err.validator == "additionalProperties"
        and "$component_ref" not in instance
        and _own(err).get("required") == ["$component_ref"]
    ):
        return True
    if err.validator == "type" and not path:
        return True
    return bool(err.context) and all(_refuses_kind(s, instance) for s in err.context)


def _own(err: ValidationError) -> Map:
    """The schema an error is about, as a mapping (jsonschema types it as a schema or a bool)."""
    return err.schema if isinstance(err.schema, Mapping) else {}
