"""Tool arguments checked without jsonschema (runtime/loop/plain_schema.py) are accepted and
refused exactly as jsonschema's Draft 2020-12 validator (the tools' validator, no format
checker) accepts and refuses them: generated schemas and values are given to both. A schema
holding a keyword the plain check does not know is left to jsonschema whole."""

from __future__ import annotations

import json
from typing import Any

import yaml
from conftest import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from flowrun.runtime.loop.plain_schema import KEYWORDS, compile_schema, parameters_check

NAMES = st.sampled_from(["path", "mode", "n", "items", "x"])
NUMBERS = st.integers(-5, 5) | st.sampled_from([0.5, 2.0, -1.5])
SCALARS = st.none() | st.booleans() | NUMBERS | st.text(max_size=4) | st.sampled_from(["a", "b", "path"])
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(NAMES, inner, max_size=4),
    max_leaves=12,
)
TYPE_NAMES = st.sampled_from(["object", "array", "string", "boolean", "integer", "number", "null"])


def plain_schemas() -> st.SearchStrategy[Any]:
    """Schemas built from the keywords the plain check handles, with annotations among them."""

    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        keywords = st.fixed_dictionaries(
            {},
            optional={
                "type": TYPE_NAMES | st.lists(TYPE_NAMES, min_size=1, max_size=3),
                "properties": st.dictionaries(NAMES, inner, max_size=3),
                "required": st.lists(NAMES, max_size=3, unique=True),
                "additionalProperties": inner,
                "items": inner,
                "enum": st.lists(st.sampled_from(["a", "b", "path", ""]), min_size=1, max_size=3),
                "minimum": NUMBERS,
                "maximum": NUMBERS,
                "exclusiveMinimum": NUMBERS,
                "exclusiveMaximum": NUMBERS,
                "minLength": st.integers(0, 3),
                "maxLength": st.integers(0, 3),
                "minItems": st.integers(0, 3),
                "maxItems": st.integers(0, 3),
                "format": st.sampled_from(["date", "email"]),
                "description": st.text(max_size=3),
                "default": SCALARS,
                "x-note": SCALARS,
            },
        )
        return keywords | st.booleans()

    return st.recursive(st.booleans() | st.just({}), extend, max_leaves=8)


def jsonschema_valid(schema: Any, value: Any) -> bool:
    return not any(Draft202012Validator(schema).iter_errors(value))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=plain_schemas(), value=VALUES)
def test_plain_schemas_are_checked_as_jsonschema_checks_them(schema: Any, value: Any) -> None:
    check = compile_schema(schema)
    assert check is not None, schema  # every one of these is the plain check's
    assert check(value) == jsonschema_valid(schema, value), (schema, value)


@settings(max_examples=200, deadline=None)
@given(
    value=VALUES,
    keyword=st.sampled_from(
        [
            ("pattern", "^a"),
            ("anyOf", [{"type": "string"}]),
            ("$ref", "#/$defs/x"),
            ("const", 1),
            ("enum", [1, "a"]),
            ("uniqueItems", True),
            ("patternProperties", {"^p": {"type": "string"}}),
            ("minProperties", 1),
            ("prefixItems", [{"type": "string"}]),
        ]
    ),
    nested=st.booleans(),
)
def test_other_keywords_leave_the_whole_schema_to_jsonschema(
    value: Any, keyword: tuple[str, Any], nested: bool
) -> None:
    inner: dict[str, Any] = {keyword[0]: keyword[1]}
    schema = {"type": "object", "properties": {"path": inner}} if nested else inner
    assert compile_schema(schema) is None
    assert parameters_check(json.dumps(schema, sort_keys=True))(value) is False  # jsonschema decides


def test_values_json_does_not_make_are_left_to_jsonschema() -> None:
    from decimal import Decimal

    check = compile_schema({"type": "object", "properties": {"n": {"maximum": 1}}})
    assert check is not None
    assert check({"n": 1}) and not check({"n": 2})
    assert not check({"n": Decimal(0)}) and not check({"n": (1,)}) and not check((("n", 1),))


def test_the_keywords_are_jsonschemas_validation_keywords() -> None:
    assert set(Draft202012Validator.VALIDATORS) == KEYWORDS


def test_the_builtin_tools_schemas_are_plain() -> None:
    """What the built-in tools declare is checked without jsonschema (so a run calling only
    them never imports it)."""
    for manifest in sorted((REPO / "tools.d").glob("*.yaml")):
        parameters = yaml.safe_load(manifest.read_text())["parameters"]
        assert compile_schema(parameters) is not None, manifest.name
