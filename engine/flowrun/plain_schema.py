"""Tool arguments checked against the JSON Schemas tools usually declare (types, properties,
required, additionalProperties, items, string enums, bounds and lengths) without jsonschema:
its import is about 130M instructions, a tenth of what a short run's process spent beyond the
SDK's own, paid at the first tool call (the run's, runtime/loop/dispatch.py; a dry run's made-up
arguments, providers/test_provider.py). tests/test_plain_schema.py compares the two.

It only ever answers "valid". A schema holding a validation keyword it does not check ($ref,
anyOf, pattern, ...), or a value it finds invalid, goes to jsonschema's Draft 2020-12 validator
(without a format checker, as the tools' is), which decides and words the errors: a call is
accepted or refused exactly as before. Keywords that are not validation keywords (description,
default, $defs, an `x-` extension) are passed over, as jsonschema passes over them."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import cast

Check = Callable[[object], bool]  # True: valid, decided here

# every validation keyword of Draft 2020-12 (jsonschema's Draft202012Validator.VALIDATORS; a
# test keeps the two equal): one of these that `_MAKERS` lacks sends its schema to jsonschema
KEYWORDS = frozenset(
    {
        "$dynamicRef",
        "$ref",
        "additionalProperties",
        "allOf",
        "anyOf",
        "const",
        "contains",
        "dependentRequired",
        "dependentSchemas",
        "enum",
        "exclusiveMaximum",
        "exclusiveMinimum",
        "format",
        "if",
        "items",
        "maxItems",
        "maxLength",
        "maxProperties",
        "maximum",
        "minItems",
        "minLength",
        "minProperties",
        "minimum",
        "multipleOf",
        "not",
        "oneOf",
        "pattern",
        "patternProperties",
        "prefixItems",
        "properties",
        "propertyNames",
        "required",
        "type",
        "unevaluatedItems",
        "unevaluatedProperties",
        "uniqueItems",
    }
)


def _json_type(value: object) -> str | None:
    """The JSON type of a value as `json.loads` makes it; None for anything else (a subclass,
    a tuple, a Decimal: jsonschema decides those)."""
    kind = type(value)
    if kind is dict:
        return "object"
    if kind is list:
        return "array"
    if kind is str:
        return "string"
    if kind is bool:
        return "boolean"
    if kind is int:
        return "integer"
    if kind is float:
        return "number"
    return "null" if value is None else None


def _is(name: str, value: object) -> bool:
    """Whether `value` is of the schema type `name` (integers are numbers, and so is a float
    with no fraction an integer, as in Draft 2020-12)."""
    found = _json_type(value)
    if found == name:
        return True
    if name == "number":
        return found == "integer"
    return name == "integer" and found == "number" and float(value).is_integer()  # type: ignore[arg-type]


TYPES = ("object", "array", "string", "boolean", "integer", "number", "null")


def _number(arg: object) -> bool:
    return type(arg) in (int, float)


def _count(arg: object) -> bool:
    return type(arg) is int and arg >= 0


def _type(arg: object, schema: Mapping[str, object]) -> Check | None:
    names = [arg] if isinstance(arg, str) else arg
    if not isinstance(names, list) or not all(name in TYPES for name in names):
        return None
    return lambda value: any(_is(name, value) for name in names)


def _properties(arg: object, schema: Mapping[str, object]) -> Check | None:
    if not isinstance(arg, dict):
        return None
    subs = {name: compile_schema(sub) for name, sub in arg.items()}
    if any(sub is None for sub in subs.values()):
        return None
    checks: dict[str, Check] = {name: sub for name, sub in subs.items() if sub is not None}
    return lambda value: (
        type(value) is not dict or all(check(value[name]) for name, check in checks.items() if name in value)
    )


def _additional(arg: object, schema: Mapping[str, object]) -> Check | None:
    declared = schema.get("properties", {})
    sub = compile_schema(arg)
    if sub is None or not isinstance(declared, dict):
        return None
    return lambda value: (
        type(value) is not dict or all(sub(item) for name, item in value.items() if name not in declared)
    )


def _required(arg: object, schema: Mapping[str, object]) -> Check | None:
    if not isinstance(arg, list) or not all(type(name) is str for name in arg):
        return None
    return lambda value: type(value) is not dict or all(name in value for name in arg)


def _items(arg: object, schema: Mapping[str, object]) -> Check | None:
    sub = compile_schema(arg)
    if sub is None:
        return None
    return lambda value: type(value) is not list or all(sub(item) for item in value)


def _enum(arg: object, schema: Mapping[str, object]) -> Check | None:
    if not isinstance(arg, list) or not all(type(item) is str for item in arg):
        return None  # numbers, booleans and structures compare by jsonschema's rules there
    allowed = frozenset(arg)
    return lambda value: type(value) is str and value in allowed


def _bound(test: Callable[[float, float], bool]) -> Callable[[object, Mapping[str, object]], Check | None]:
    def make(arg: object, schema: Mapping[str, object]) -> Check | None:
        if not _number(arg):
            return None
        limit = cast(float, arg)
        return lambda value: _json_type(value) not in ("integer", "number") or test(cast(float, value), limit)

    return make


def _size(
    json_type: str, test: Callable[[int, int], bool]
) -> Callable[[object, Mapping[str, object]], Check | None]:
    def make(arg: object, schema: Mapping[str, object]) -> Check | None:
        if not _count(arg):
            return None
        limit: int = arg  # type: ignore[assignment]
        return lambda value: _json_type(value) != json_type or test(len(value), limit)  # type: ignore[arg-type]

    return make


def _annotation(arg: object, schema: Mapping[str, object]) -> Check | None:
    return _always  # `format` asserts nothing without a format checker


def _always(value: object) -> bool:
    return True


def _never(value: object) -> bool:
    return False


_MAKERS: dict[str, Callable[[object, Mapping[str, object]], Check | None]] = {
    "type": _type,
    "properties": _properties,
    "additionalProperties": _additional,
    "required": _required,
    "items": _items,
    "enum": _enum,
    "minimum": _bound(lambda value, limit: value >= limit),
    "maximum": _bound(lambda value, limit: value <= limit),
    "exclusiveMinimum": _bound(lambda value, limit: value > limit),
    "exclusiveMaximum": _bound(lambda value, limit: value < limit),
    "minLength": _size("string", lambda size, limit: size >= limit),
    "maxLength": _size("string", lambda size, limit: size <= limit),
    "minItems": _size("array", lambda size, limit: size >= limit),
    "maxItems": _size("array", lambda size, limit: size <= limit),
    "format": _annotation,
}


def compile_schema(schema: object) -> Check | None:
    """A check of values against `schema`, or None when this module does not check schemas
    like it (jsonschema must). The check's True means valid; False, ask jsonschema."""
    if schema is True:
        return _always
    if schema is False:
        return _never
    if not isinstance(schema, dict):
        return None
    checks: list[Check] = []
    for key, arg in schema.items():
        if key not in KEYWORDS:
            continue  # an annotation or an unknown key: jsonschema passes over it too
        make = _MAKERS.get(key)
        check = make(arg, schema) if make is not None else None
        if check is None:
            return None
        if check is not _always:
            checks.append(check)
    # a value json.loads cannot make (a tuple, a Decimal) is left to jsonschema
    return lambda value: _json_type(value) is not None and all(check(value) for check in checks)


def plain_check(schema: object) -> Check:
    """`compile_schema`, or a check that answers False for every value when it cannot check
    the schema (jsonschema decides them all)."""
    return compile_schema(schema) or _never


@lru_cache(maxsize=512)
def parameters_check(schema_json: str) -> Check:
    """The plain check of one parameters schema (as canonical JSON), once per process."""
    return plain_check(json.loads(schema_json))
