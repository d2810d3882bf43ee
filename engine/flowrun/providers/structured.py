"""Structured output on the wire: an agent's `output_schema` as each API wants it.

- OpenAI Chat Completions: `response_format: {type: json_schema, json_schema: {name, schema,
  strict}}`; `strict` only when the schema meets strict mode's rules (every object closed with
  `additionalProperties: false` and every property required), since a strict request with any
  other schema is refused;
- Anthropic Messages: a forced tool whose input schema is the output schema; the model answers
  by calling it (`tool_choice: any`, so it may still call its other tools first; `auto` with
  extended thinking, which rejects forced tool use), and its input becomes the answer text;
- any other provider, or a model with `structured_output: instructions`: the schema goes into the
  system prompt as instructions.

Whatever the provider, the runtime validates the answer and asks for repairs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from flowrun.providers.base import ModelRequest
from flowrun.types import ModelResponse, ToolSpec

FINAL_TOOL = "final_answer"
FINAL_TOOL_DESCRIPTION = (
    "Give your final answer by calling this tool once you are done, with the answer as its "
    "arguments. Do not call it together with other tools."
)


def output_instructions(schema: Mapping[str, object]) -> str:
    text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    return (
        "## Final answer format\n"
        "Your final answer (the answer you give without calling a tool) must be exactly one JSON "
        "value valid against this JSON Schema, with no other text around it:\n" + text
    )


def with_instructions(request: ModelRequest) -> ModelRequest:
    """The request with the schema described in its system prompt (and no native format)."""
    if request.output_schema is None:
        return request
    system = f"{request.system}\n\n{output_instructions(request.output_schema)}".strip()
    return replace(request, system=system, output_schema=None)


# keywords OpenAI's strict mode refuses (a request with one is a 400); without strict, the model
# gets the schema as guidance and flowrun still validates the answer
NOT_IN_STRICT = frozenset(
    {
        "oneOf", "allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas",
        "patternProperties", "propertyNames", "unevaluatedProperties", "unevaluatedItems",
        "minProperties", "maxProperties", "contains", "minContains", "maxContains", "uniqueItems",
    }
)  # fmt: skip


def strict_compatible(schema: object) -> bool:
    """Whether OpenAI's strict mode accepts the schema: every object lists all its properties
    as required and forbids others, no keyword strict mode refuses, no `anyOf` at the root."""
    return not (isinstance(schema, dict) and "anyOf" in schema) and _strict_subschema(schema)


def _strict_subschema(schema: object) -> bool:
    if isinstance(schema, list):
        return all(_strict_subschema(s) for s in schema)
    if not isinstance(schema, dict):
        return True
    if NOT_IN_STRICT & set(schema):
        return False
    if schema.get("type") == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False or set(schema.get("required") or []) != set(props):
            return False
    return all(_strict_subschema(v) for v in _subschemas(schema))


def _subschemas(schema: dict[str, Any]) -> list[object]:
    """The values of a schema that are schemas (or lists of them): a map of named schemas
    (`properties`, `$defs`) gives its values, so a property called `contains` is no keyword."""
    out: list[object] = []
    for key, value in schema.items():
        if key in ("enum", "const", "default", "examples"):
            continue
        named = key in ("properties", "$defs", "definitions") and isinstance(value, dict)
        out += list(value.values()) if named else [value]
    return out


def openai_response_format(name: str, schema: Mapping[str, object]) -> dict[str, object]:
    safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in name)[:64] or "answer"
    return {
        "type": "json_schema",
        "json_schema": {"name": safe, "schema": schema, "strict": strict_compatible(schema)},
    }


def final_tool_name(tools: list[ToolSpec]) -> str:
    """`final_answer`, unless the agent already has a tool of that name."""
    names = {t.name for t in tools}
    name = FINAL_TOOL
    while name in names:
        name += "_"
    return name


def final_tool(tools: list[ToolSpec], schema: dict[str, Any]) -> ToolSpec:
    return ToolSpec(final_tool_name(tools), FINAL_TOOL_DESCRIPTION, schema)


def answer_from_final_tool(response: ModelResponse, name: str) -> ModelResponse:
    """A call of the final-answer tool made alone is the answer: its input as JSON text, no tool
    calls. Made along with other tools, it is dropped: those run, and the model answers again."""
    finals = [c for c in response.tool_calls if c.name == name]
    if not finals:
        return response
    others = [c for c in response.tool_calls if c.name != name]
    if others:
        response.tool_calls = others
        return response
    call = finals[0]
    raw = call.raw_arguments if call.parse_error else None
    response.text = raw if raw is not None else json.dumps(call.arguments, ensure_ascii=False)
    response.tool_calls = []
    response.stop_reason = "end_turn"
    return response
