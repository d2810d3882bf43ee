"""Values valid for a JSON Schema, for the offline test provider (--dry-run): harmless, chosen to
show wiring (a file the agent may write, a page it can visit, the run's question), and valid for
the constraints tool schemas use (enum, const, default, type, minimum/maximum and their exclusive
forms, multipleOf, minLength/maxLength, pattern, format, minItems/uniqueItems, required
properties, anyOf/oneOf/allOf, local $ref). A value that cannot be made raises Unavailable; the
caller checks the whole result against the schema anyway."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from flowrun.regexes import compile_regex


class Unavailable(Exception):
    """The dry run cannot make valid arguments for this tool (yet)."""


# a value per JSON Schema `format`: each one passes its format check
FORMATS = {
    "date": "2025-01-01",
    "date-time": "2025-01-01T00:00:00Z",
    "time": "12:00:00",
    "duration": "P1D",
    "email": "dry-run@example.com",
    "idn-email": "dry-run@example.com",
    "hostname": "example.invalid",
    "idn-hostname": "example.invalid",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "uri": "https://example.invalid/",
    "iri": "https://example.invalid/",
    "uri-reference": "https://example.invalid/",
    "iri-reference": "https://example.invalid/",
    "json-pointer": "/dry-run",
    "regex": "dry",
}
# strings tried for a `pattern` before one is built from the regex
PATTERN_CANDIDATES = ("dry-run", "dry", "a", "abc", "dry_run", "x1", "A", "ABC", "1", "0", "2025-01-01")


def sample_value(name: str, schema: Any, hints: Mapping[str, object], root: object = None) -> Any:
    """A value valid for `schema` (`root`: the whole schema, for a local $ref), chosen to be
    harmless and to show wiring."""
    root = root if root is not None else schema
    schema = _resolved(schema, root)
    if "enum" in schema:
        options = schema["enum"]
        preferred = [o for o in options if o in ("overwrite", "basic")]
        return preferred[0] if preferred else options[0]
    if "const" in schema:
        return schema["const"]
    if "default" in schema:
        return schema["default"]
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list) and options:
        return _first_valid(name, schema, options, hints, root)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "null":
        return None
    if kind == "object" or (kind is None and "properties" in schema):
        return sample_object(schema, hints, root)
    if kind == "array":
        return _sample_array(name, schema, hints, root)
    if kind in ("integer", "number"):
        return sample_number(schema, integer=kind == "integer")
    if kind == "boolean":
        return False
    return _sample_text(name, schema, hints)


def sample_object(
    schema: dict[str, Any], hints: Mapping[str, object], root: object = None
) -> dict[str, object]:
    """The object's required properties, each sampled."""
    root = root if root is not None else schema
    schema = _resolved(schema, root)
    props = schema.get("properties", {})
    return {
        name: sample_value(name, props[name], hints, root)
        for name in schema.get("required", [])
        if name in props
    }


def sample_number(schema: dict[str, Any], integer: bool) -> float | int:
    """The smallest harmless number in range (1 when the range allows it), a multiple of
    `multipleOf` when one is asked for."""
    low, high = _bounds(schema, integer)
    value: float = 1
    if low > 1 or high < 1:
        value = low if low != -math.inf else high
    step = schema.get("multipleOf")
    if isinstance(step, int | float) and step > 0:
        value = math.ceil(value / step) * step
        if integer:
            value = int(value)
    if not low <= value <= high:
        raise Unavailable("number")
    return int(value) if integer else float(value)


def _bounds(schema: dict[str, Any], integer: bool) -> tuple[float, float]:
    nudge = 1 if integer else 1e-6
    low, high = -math.inf, math.inf
    if isinstance(schema.get("minimum"), int | float):
        low = schema["minimum"]
    if isinstance(schema.get("exclusiveMinimum"), int | float):
        low = max(low, schema["exclusiveMinimum"] + nudge)
    if isinstance(schema.get("maximum"), int | float):
        high = schema["maximum"]
    if isinstance(schema.get("exclusiveMaximum"), int | float):
        high = min(high, schema["exclusiveMaximum"] - nudge)
    if integer:
        low, high = (
            math.ceil(low) if low != -math.inf else low,
            math.floor(high) if high != math.inf else high,
        )
    return low, high


def _sample_array(
    name: str, schema: dict[str, Any], hints: Mapping[str, object], root: object
) -> list[object]:
    found = schema.get("items")
    items: dict[str, object] = found if isinstance(found, dict) else {}
    values = [sample_value(name, items, hints, root) for _ in range(int(schema.get("minItems", 0)))]
    if schema.get("uniqueItems") and len(values) > 1:
        distinct: list[object] = []
        for value in values:
            distinct.append(value if value not in distinct else _other(value, distinct, items, root))
        values = distinct
    return values


def _other(value: Any, taken: list[Any], items: dict[str, Any], root: object) -> object:
    """An item valid for `items` and unlike those `taken` (uniqueItems)."""
    from jsonschema import Draft202012Validator

    n = len(taken)
    if isinstance(value, str):
        letters = [c * k for k in (1, 2, 3) for c in "abcxyz"]
        candidates: list[Any] = [f"{value}-{n}", f"{value}{n}", *PATTERN_CANDIDATES, *letters]
    elif isinstance(value, int | float) and not isinstance(value, bool):
        step = items.get("multipleOf", 1)
        candidates = [value + step * k for k in range(1, 50)]
    else:
        candidates = []
    check = Draft202012Validator({**items, "$defs": root.get("$defs", {}) if isinstance(root, dict) else {}})
    for candidate in candidates:
        if candidate not in taken and check.is_valid(candidate):
            return candidate
    raise Unavailable("uniqueItems")


def _sample_text(name: str, schema: dict[str, Any], hints: Mapping[str, object]) -> str:
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in FORMATS:
        text = str(hints.get("url")) if fmt in ("uri", "iri") and hints.get("url") else FORMATS[fmt]
    else:
        text = sample_string(name, hints)
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        return _matching(pattern, text)  # lengths are checked with the rest
    text = text.ljust(int(schema.get("minLength", 0)), ".")
    high = schema.get("maxLength")
    return text[:high] if isinstance(high, int) else text


def sample_string(name: str, hints: Mapping[str, object]) -> str:
    agent = hints.get("agent", "agent")
    if name in ("path", "file_path", "filepath", "filename"):
        return str(hints.get("path") or hints.get("write_path") or f"dry-run/{agent}.md")
    if name == "content":
        return f"dry run by {agent}: wiring checked\nsecond line\n"
    if name in ("new_content", "text", "result", "task", "description"):
        return f"dry run by {agent}: wiring checked"
    if name in ("query", "question"):
        return str(hints.get("query", "overview"))
    if name in ("command",):
        return "echo dry-run"
    if name in ("pattern",):
        return "dry"
    if name == "url":
        return str(hints.get("url", "https://example.invalid/"))
    if name.endswith("_id"):
        handles = hints.get("handles")
        found = handles.get(name) if isinstance(handles, Mapping) else None
        if found is None:
            raise Unavailable(name)
        return str(found)
    return "dry-run"


# ---------------------------------------------------------------- patterns


def _matching(pattern: str, preferred: str) -> str:
    """`preferred` when it matches the pattern (searched, as JSON Schema does), else a common
    word that does, else a string built from the regex."""
    try:
        compiled = compile_regex(pattern)
    except re.error as e:
        raise Unavailable(f"pattern {pattern!r}: {e}") from None
    for text in (preferred, *PATTERN_CANDIDATES):
        if compiled.search(text):
            return text
    built = _from_regex(pattern)
    if built is None or not compiled.search(built):
        raise Unavailable(f"pattern {pattern!r}")
    return built


def _from_regex(pattern: str) -> str | None:
    """A short string the regex matches, built from its parse tree (Python's own parser)."""
    import importlib

    try:
        parser = importlib.import_module("re._parser")
        return _emit(list(parser.parse(pattern)))
    except Exception:  # an unusual construct: no string (the caller reports the tool as left out)
        return None


def _emit(items: list[Any]) -> str:
    out = []
    for op, arg in items:
        out.append(_emit_one(str(op), arg))
    return "".join(out)


def _emit_one(op: str, arg: Any) -> str:
    if op == "LITERAL":
        return chr(arg)
    if op in ("NOT_LITERAL", "ANY"):
        return "x" if op == "ANY" or arg != ord("x") else "y"
    if op == "IN":
        return _class_char(arg)
    if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        low, _, sub = arg
        return _emit(list(sub)) * int(low)  # the fewest repeats: `x*` none, `x+` one, `x{4}` four
    if op == "SUBPATTERN":
        return _emit(list(arg[-1]))
    if op == "ATOMIC_GROUP":
        return _emit(list(arg))
    if op == "BRANCH":
        return _emit(list(arg[1][0]))
    if op in ("AT", "ASSERT", "ASSERT_NOT"):
        return ""
    raise ValueError(op)


def _class_char(items: list[Any]) -> str:
    """A character of a [...] class (or of its complement, with ^)."""
    negate = any(str(op) == "NEGATE" for op, _ in items)
    candidates = "a0xA_- ." if negate else ""
    for op, arg in items:
        kind = str(op)
        if kind == "LITERAL":
            candidates += chr(arg)
        elif kind == "RANGE":
            candidates += chr(arg[0])
        elif kind == "CATEGORY":
            candidates += {"CATEGORY_DIGIT": "0", "CATEGORY_WORD": "a", "CATEGORY_SPACE": " "}.get(
                str(arg), "-"
            )
    for ch in candidates:
        if _in_class(ch, items) != negate:
            return ch
    raise ValueError("empty class")


def _in_class(ch: str, items: list[Any]) -> bool:
    code = ord(ch)
    tests = {
        "CATEGORY_DIGIT": ch.isdigit(),
        "CATEGORY_NOT_DIGIT": not ch.isdigit(),
        "CATEGORY_WORD": ch.isalnum() or ch == "_",
        "CATEGORY_NOT_WORD": not (ch.isalnum() or ch == "_"),
        "CATEGORY_SPACE": ch.isspace(),
        "CATEGORY_NOT_SPACE": not ch.isspace(),
    }
    for op, arg in items:
        kind = str(op)
        if (kind == "LITERAL" and code == arg) or (kind == "RANGE" and arg[0] <= code <= arg[1]):
            return True
        if kind == "CATEGORY" and tests.get(str(arg), False):
            return True
    return False


# ---------------------------------------------------------------- composition


def _resolved(schema: object, root: object) -> dict[str, Any]:
    """The schema with a local `$ref` followed and `allOf` merged into it."""
    if not isinstance(schema, dict):
        return {}
    node: dict[str, Any] = {str(k): v for k, v in schema.items()}
    seen = 0
    while isinstance(node.get("$ref"), str) and seen < 20:
        node = {**_pointer(root, node["$ref"]), **{k: v for k, v in node.items() if k != "$ref"}}
        seen += 1
    parts = node.get("allOf")
    if not isinstance(parts, list):
        return node
    merged: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
    for part in parts:
        for key, value in _resolved(part, root).items():
            if key == "properties":
                merged["properties"] = {**merged.get("properties", {}), **value}
            elif key == "required":
                merged["required"] = [*merged.get("required", []), *value]
            else:
                merged.setdefault(key, value)
    return merged


def _pointer(root: object, ref: str) -> dict[str, object]:
    if not ref.startswith("#"):
        raise Unavailable(f"$ref {ref}")
    node = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            raise Unavailable(f"$ref {ref}")
        node = node[part]
    return node if isinstance(node, dict) else {}


def _first_valid(
    name: str, schema: dict[str, Any], options: list[Any], hints: Mapping[str, object], root: object
) -> object:
    """The first option (non-null ones first) whose sample the whole schema accepts."""
    from jsonschema import Draft202012Validator

    defs = root.get("$defs", {}) if isinstance(root, Mapping) else {}
    check = Draft202012Validator({**schema, "$defs": defs})
    ordered = sorted(options, key=lambda o: isinstance(o, dict) and o.get("type") == "null")
    for option in ordered:
        try:
            value = sample_value(name, option, hints, root)
        except Unavailable:
            continue
        if check.is_valid(value):
            return value
    raise Unavailable(name)
