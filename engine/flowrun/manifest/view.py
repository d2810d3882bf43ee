"""Typed reads of manifest data that already passed its JSON Schema: attribute access with the
schema's defaults, nested objects and union branches resolved from the schema itself.

Reading manifests this way keeps pydantic (the schema's source, see specs.py) off the start-up
path of `flowrun validate` and `flowrun run`; a field the schema does not declare is an
AttributeError, so a typo in engine code fails loudly."""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from typing import Any

from flowrun.paths import builtin_root

Schema = dict[str, Any]


@cache
def load_schema(kind: str) -> Schema:
    return json.loads((builtin_root() / "schema" / f"{kind}.schema.json").read_text(encoding="utf-8"))


def _resolve(schema: Schema, root: Schema) -> Schema:
    ref = schema.get("$ref")
    if ref and ref.startswith("#/$defs/"):
        return {**root["$defs"][ref.rsplit("/", 1)[1]], **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _branch(value: Any, schema: Schema, root: Schema) -> Schema:
    """The anyOf/oneOf branch that fits `value`: for a mapping, the object whose properties hold
    all its keys (fewest extras first); otherwise the first branch of a matching type."""
    options = [_resolve(o, root) for o in schema.get("anyOf") or schema.get("oneOf") or []]
    if not options:
        return schema
    if isinstance(value, dict):
        objects = [
            o for o in options if o.get("type") == "object" or "properties" in o or "patternProperties" in o
        ]
        for option in objects:
            if "properties" in option and set(value) <= set(option["properties"]):
                return option
        return objects[0] if objects else schema
    if isinstance(value, list):
        return next((o for o in options if o.get("type") == "array"), schema)
    return schema


def wrap(value: Any, schema: Schema, root: Schema) -> Any:
    schema = _resolve(schema, root)
    if "anyOf" in schema or "oneOf" in schema:
        schema = _branch(value, schema, root)
    if isinstance(value, dict):
        if "properties" in schema:
            return SpecView(value, schema, root)
        patterns = schema.get("patternProperties") or {}
        extra = schema.get("additionalProperties")
        if patterns or isinstance(extra, dict):
            return {k: wrap(v, _value_schema(k, patterns, extra), root) for k, v in value.items()}
        return value
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [wrap(item, schema["items"], root) for item in value]
    return value


def _value_schema(key: str, patterns: dict[str, Schema], extra: Any) -> Schema:
    for pattern, sub in patterns.items():
        if re.search(pattern, key):
            return sub
    return extra if isinstance(extra, dict) else {}


class SpecView:
    """One manifest object (or a nested one): attributes are its schema's properties."""

    __slots__ = ("_data", "_root", "_schema")

    def __init__(self, data: dict[str, Any], schema: Schema, root: Schema) -> None:
        self._data = data
        self._schema = schema
        self._root = root

    def __getattr__(self, name: str) -> Any:
        props = self._schema.get("properties", {})
        if name not in props:
            raise AttributeError(f"{self._schema.get('title', 'manifest')} has no field {name!r}")
        if name in self._data:
            return wrap(self._data[name], props[name], self._root)
        default = _resolve(props[name], self._root).get("default")
        return wrap(copy.deepcopy(default), props[name], self._root) if default is not None else None

    def __repr__(self) -> str:
        return f"{self._schema.get('title', 'SpecView')}({self._data!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SpecView) and self._data == other._data and self._schema is other._schema

    __hash__ = None  # type: ignore[assignment]

    @property
    def fields_set(self) -> set[str]:
        """The keys the manifest wrote itself (not defaults)."""
        return set(self._data)

    def merged(self, update: dict[str, Any]) -> SpecView:
        """A copy with `update` (raw values) over this object's keys; None removes a key."""
        data = {**self._data, **update}
        return SpecView({k: v for k, v in data.items() if v is not None}, self._schema, self._root)

    def raw(self, name: str) -> Any:
        return self._data.get(name)

    def to_dict(self) -> dict[str, Any]:
        """The keys the manifest set, as plain data."""
        return copy.deepcopy(self._data)


def view(kind: str, data: dict[str, Any]) -> SpecView:
    """A typed view of a whole manifest of `kind`."""
    root = load_schema(kind)
    return SpecView(data, root, root)


def model_view(data: dict[str, Any]) -> SpecView:
    """A typed view of one model entry (the shape of `models:` values)."""
    root = load_schema("models")
    return SpecView(data, root["$defs"]["ModelSpec"], root)
