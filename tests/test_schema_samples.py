"""The dry run's argument maker over the class of schemas tool authors write: every value it
makes is valid (formats included), and a schema nothing satisfies is reported, never faked."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from flowrun.providers.schema_samples import Unavailable, sample_value

VALID = [
    {"type": "string"},
    {"type": "string", "minLength": 30},
    {"type": "string", "maxLength": 3},
    {"type": "string", "pattern": "^[A-Z]{3}$"},
    {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
    {"type": "string", "pattern": "^(get|put)_[a-z]+[0-9]?$"},
    {"type": "string", "pattern": r"^[^\s/]+\.(csv|json)$"},
    {"type": "string", "pattern": "x+y"},
    {"type": "string", "pattern": "^#[0-9a-fA-F]{6}$", "minLength": 7},
    *(
        {"type": "string", "format": f}
        for f in ("date", "date-time", "time", "email", "uri", "uuid", "ipv4", "ipv6")
    ),
    {"type": "integer", "minimum": -10, "maximum": -3},
    {"type": "integer", "exclusiveMinimum": 7},
    {"type": "integer", "minimum": 0, "maximum": 0},
    {"type": "integer", "multipleOf": 5, "minimum": 3},
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    {"type": "number", "minimum": 2.5},
    {"type": ["null", "boolean"]},
    {
        "type": "array",
        "items": {"type": "integer", "minimum": 1, "maximum": 3},
        "minItems": 3,
        "uniqueItems": True,
    },
    {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 2, "uniqueItems": True},
    {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}, "minItems": 4, "uniqueItems": True},
    {"oneOf": [{"type": "integer", "minimum": 5}, {"type": "string"}]},
    {"anyOf": [{"type": "null"}, {"type": "string", "format": "email"}]},
    {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"required": ["b"], "properties": {"b": {"const": 2}}},
        ]
    },
    {
        "type": "object",
        "$defs": {"p": {"type": "string", "pattern": "^p[0-9]$"}},
        "properties": {"x": {"$ref": "#/$defs/p"}},
        "required": ["x"],
    },
    {
        "type": "object",
        "properties": {
            "deep": {
                "type": "object",
                "properties": {"n": {"type": "integer", "minimum": 4}},
                "required": ["n"],
            }
        },
        "required": ["deep"],
    },
]


@pytest.mark.parametrize("schema", VALID, ids=[str(i) for i in range(len(VALID))])
def test_samples_are_valid(schema: dict[str, Any]) -> None:
    value = sample_value("arg", schema, {"agent": "a"})
    errors = [
        e.message for e in Draft202012Validator(schema, format_checker=FormatChecker()).iter_errors(value)
    ]
    assert errors == [], (value, errors)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "integer", "minimum": 5, "maximum": 4},
        {"type": "integer", "minimum": 1, "maximum": 4, "multipleOf": 5},
        {"type": "string", "pattern": "("},
        {"type": "array", "items": {"enum": ["a"]}, "minItems": 2, "uniqueItems": True},
        {"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}, "required": ["x"]},
    ],
)
def test_impossible_schemas_are_unavailable(schema: dict[str, Any]) -> None:
    with pytest.raises(Unavailable):
        sample_value("arg", schema, {"agent": "a"})
