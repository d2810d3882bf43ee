"""A workflow's inputs: values checked against the input declarations (type, choices), text
converted to the declared type, defaults filled in, missing required inputs refused. Values can
come from files: `@PATH` (`@-` for stdin) as one value, or a YAML/JSON file of `name: value`.
Text must be valid Unicode: undecodable bytes are named, never passed on."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

from flowrun.errors import UsageError
from flowrun.manifest.specs import InputSpec
from flowrun.types import MAX_JSON_DEPTH, decode_json, nested_too_deep

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")


def shown_name(name: str, cli: bool) -> str:
    """How a message names an input: as the flag on a command line (`--question`), else by
    name (`input 'question'`: a Python caller's, a batch item's, an HTTP request's)."""
    return f"--{name}" if cli else f"input {name!r}"


def convert(name: str, value: object, spec: InputSpec, cli: bool = True) -> object:
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
            if str(value).strip().lower() in TRUE:
                return True
            if str(value).strip().lower() in FALSE:
                return False
            raise ValueError(value)
    except ValueError:
        raise UsageError(f"{shown_name(name, cli)} expects {kind}, got {value!r}") from None
    return value if isinstance(value, str) else str(value)


def to_list(value: object) -> list[object]:
    """A list input: a list as it is; text that is a JSON array is parsed; other text is one
    item per non-empty line."""
    if isinstance(value, list | tuple):
        return list(value)
    text = str(value)
    if text.lstrip().startswith("["):
        try:
            parsed = decode_json(text)
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, list):
            return parsed
    return [line.strip() for line in text.splitlines() if line.strip()]


def check_choice(name: str, value: object, spec: InputSpec, cli: bool = True) -> object:
    if spec.choices and isinstance(value, list):
        for item in value:
            check_choice(name, item, spec, cli)
        return value
    if spec.choices and value not in spec.choices and str(value) not in map(str, spec.choices):
        choices = ", ".join(map(str, spec.choices))
        raise UsageError(f"{shown_name(name, cli)} must be one of {choices}, got {value!r}")
    return value


def check_text(name: str, value: str, cli: bool = True) -> str:
    """`value` when it can be written as UTF-8. A command-line argument with bytes that are
    not UTF-8 arrives with them escaped as lone surrogates (PEP 383): the first is named."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        char = value[e.start]
        what = f"byte 0x{ord(char) - 0xDC00:02x}" if 0xDC80 <= ord(char) <= 0xDCFF else f"U+{ord(char):04X}"
        raise UsageError(
            f"{shown_name(name, cli)} is not valid UTF-8: {what} at character {e.start + 1}",
            f"pass UTF-8 text (e.g. convert it with iconv), or --{name} @FILE with a UTF-8 file"
            if cli
            else "pass UTF-8 text",
        ) from None
    return value


def checked_value(name: str, value: object, cli: bool = True) -> object:
    """A given value with all its text valid: strings UTF-8 (check_text), bytes (a YAML
    `!!binary`, a Python caller's) decoded as UTF-8 or refused naming the byte, and so for each
    item of a list or mapping."""
    if isinstance(value, bytes | bytearray):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as e:
            raise UsageError(
                f"{shown_name(name, cli)} is binary, not UTF-8 text: byte 0x{value[e.start]:02x} at "
                f"offset {e.start}",
                f"pass UTF-8 text, or --{name} @FILE with a UTF-8 file" if cli else "pass UTF-8 text",
            ) from None
    if isinstance(value, str):
        return check_text(name, value, cli)
    if isinstance(value, list | tuple):
        return [checked_value(name, item, cli) for item in value]
    if isinstance(value, dict):
        return {checked_value(name, k, cli): checked_value(name, v, cli) for k, v in value.items()}
    return value


def value_from_arg(name: str, raw: str) -> str:
    """An input given on the command line: `@PATH` is the file's text, `@-` standard input,
    and `@@...` the literal text `@...`."""
    if not raw.startswith("@"):
        return check_text(name, raw)
    if raw.startswith("@@"):
        return check_text(name, raw[1:])
    source = raw[1:]
    if source == "-":
        return decode_input(name, sys.stdin.buffer.read(), "standard input")
    path = Path(source)
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise UsageError(f"--{name} @{source}: is a folder", "give a file") from None
    except OSError as e:
        raise UsageError(f"--{name} @{source}: {e.strerror or e}", "check the path") from None
    return decode_input(name, data, source)


def decode_input(name: str, data: bytes, source: str) -> str:
    """The UTF-8 text of an input file; UsageError naming the first undecodable byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise UsageError(
            f"--{name} @{source} is not UTF-8 text: byte 0x{data[e.start]:02x} at offset {e.start} "
            f"(line {line})",
            "save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)",
        ) from None


def inputs_from_file(path: Path) -> dict[str, object]:
    """`--inputs FILE`: a YAML (or JSON) mapping of input names to values, read with the same
    limits as a manifest; problems are UsageErrors with file:line."""
    from flowrun.manifest.yaml_source import load_source

    src, diagnostics = load_source(path)
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        first = errors[0]
        raise UsageError(f"--inputs {first.file}:{first.line}:{first.column}: {first.message}", first.hint)
    if not isinstance(src.data, dict):
        raise UsageError(
            f"--inputs {path}: expected a mapping of input names to values", "e.g. question: ..."
        )
    return dict(src.data)


def resolve_inputs(
    declared: dict[str, InputSpec], given: Mapping[str, object], workflow: str, *, cli: bool = False
) -> dict[str, object]:
    """Every declared input with its value; unknown names and missing required inputs are
    usage errors. An optional input that was not given is None (templates test `if name`).
    Messages name an input as its flag when the values came from a command line (`cli`), else
    by name."""
    unknown = [name for name in given if name not in declared]
    if unknown:
        known = ", ".join(f"--{n}" if cli else n for n in declared) or "(none)"
        raise UsageError(f"unknown input '{unknown[0]}' for workflow '{workflow}'", f"its inputs: {known}")
    values: dict[str, object] = {}
    for name, spec in declared.items():
        if name in given and given[name] is not None:
            if nested_too_deep(given[name]):  # (a Python caller's value; a cycle is one too)
                deep = f"nests lists and mappings more than {MAX_JSON_DEPTH} levels deep"
                raise UsageError(f"{shown_name(name, cli)} {deep}", "flatten it")
            value = checked_value(name, given[name], cli)
            values[name] = check_choice(name, convert(name, value, spec, cli), spec, cli)
        elif spec.default is not None:
            values[name] = spec.default
        elif spec.is_required:
            named = shown_name(name, cli)
            raise UsageError(f"missing {named}", spec.description or f"the workflow needs {named}")
        else:
            values[name] = None
    return values
