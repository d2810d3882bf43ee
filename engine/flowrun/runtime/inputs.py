"""A workflow's inputs: values checked against the input declarations (type, choices), text
converted to the declared type, defaults filled in, missing required inputs refused."""

from __future__ import annotations

import json
from typing import Any

from flowrun.errors import UsageError
from flowrun.manifest.specs import InputSpec

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")


def convert(name: str, value: Any, spec: InputSpec) -> Any:
    """`value` as the declared type; text (from a command line or a CSV) is parsed."""
    kind = spec.type
    if kind == "list":
        return to_list(value)
    try:
        if kind == "integer":
            if isinstance(value, bool) or not isinstance(value, int | str):
                raise ValueError(value)
            return int(value)
        if kind == "number":
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise ValueError(value)
            return float(value)
        if kind == "boolean":
            if isinstance(value, bool):
                return value
            if str(value).lower() in TRUE:
                return True
            if str(value).lower() in FALSE:
                return False
            raise ValueError(value)
    except ValueError:
        raise UsageError(f"--{name} expects {kind}, got {value!r}") from None
    return value if isinstance(value, str) else str(value)


def to_list(value: Any) -> list[Any]:
    """A list input: a list as it is; text that is a JSON array is parsed; other text is one
    item per non-empty line."""
    if isinstance(value, list | tuple):
        return list(value)
    text = str(value)
    if text.lstrip().startswith("["):
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, list):
            return parsed
    return [line.strip() for line in text.splitlines() if line.strip()]


def check_choice(name: str, value: Any, spec: InputSpec) -> Any:
    if spec.choices and isinstance(value, list):
        for item in value:
            check_choice(name, item, spec)
        return value
    if spec.choices and value not in spec.choices and str(value) not in map(str, spec.choices):
        raise UsageError(f"--{name} must be one of {', '.join(map(str, spec.choices))}, got {value!r}")
    return value


def resolve_inputs(declared: dict[str, InputSpec], given: dict[str, Any], workflow: str) -> dict[str, Any]:
    """Every declared input with its value; unknown names and missing required inputs are
    usage errors. An optional input that was not given is None (templates test `if name`)."""
    unknown = [name for name in given if name not in declared]
    if unknown:
        known = ", ".join(f"--{n}" for n in declared) or "(none)"
        raise UsageError(f"unknown input '{unknown[0]}' for workflow '{workflow}'", f"its inputs: {known}")
    values: dict[str, Any] = {}
    for name, spec in declared.items():
        if name in given and given[name] is not None:
            values[name] = check_choice(name, convert(name, given[name], spec), spec)
        elif spec.default is not None:
            values[name] = spec.default
        elif spec.is_required:
            raise UsageError(f"missing --{name}", spec.description or f"the workflow needs --{name}")
        else:
            values[name] = None
    return values
