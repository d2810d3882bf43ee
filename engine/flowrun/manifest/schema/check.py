"""Check raw manifest data against the committed JSON Schema of its kind and turn every
violation into a Diagnostic with file:line:column and a hint (did-you-mean for unknown keys)."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable
from functools import cache
from typing import TYPE_CHECKING, Any

from flowrun.manifest import unions
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.schema.export import FOLDER_KINDS, KIND_NAMES, kind_schema
from flowrun.manifest.yaml_source import PathKey, Source
from flowrun.paths import builtin_root

if TYPE_CHECKING:
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator

SECRET_KEYS = {"api_key", "apikey", "key", "token", "auth_token", "secret", "password", "api_token"}
JSON_TYPES = {
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    list: "list",
    dict: "mapping",
    type(None): "null",
}


def load_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of a manifest kind: the committed file (generated from the specs), or,
    once a kind beyond the built-in ones is registered, one generated from the specs now."""
    return _schema(kind, unions.generation() if unions.extended() else 0)


def validator_for(kind: str) -> Validator:
    return _validator(kind, unions.generation() if unions.extended() else 0)


@cache
def _schema(kind: str, generation: int) -> dict[str, object]:
    if generation:
        return kind_schema(kind)
    schema: dict[str, object] = json.loads(
        (builtin_root() / "schema" / f"{kind}.schema.json").read_text(encoding="utf-8")
    )
    return schema


@cache
def _validator(kind: str, generation: int) -> Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(_schema(kind, generation))


def did_you_mean(word: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, sorted(options), n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else ""


def likeliest_branch(
    err: ValidationError, refuses: Callable[[ValidationError, object], bool] | None = None
) -> list[ValidationError]:
    """Of a oneOf/anyOf error, the errors of the branch the value was most likely meant as: of
    the branches none of whose errors `refuses` (given the error and the union's value: "this
    branch is another kind of thing"; all branches when each is refused), the one whose errors
    reach deepest into the value, then the one with the fewest. Empty for another error."""
    branches: dict[object, list[ValidationError]] = {}
    for sub in err.context or []:
        branches.setdefault(sub.relative_schema_path[0] if sub.relative_schema_path else 0, []).append(sub)
    value = err.instance
    fitting = [errs for errs in branches.values() if not refuses or not any(refuses(e, value) for e in errs)]
    return max(
        fitting or branches.values() or [[]],
        key=lambda errs: (max((len(e.absolute_path) for e in errs), default=0), -len(errs)),
    )


def likeliest_error(
    err: ValidationError, refuses: Callable[[ValidationError, object], bool] | None = None
) -> ValidationError:
    """What an error is about: for a oneOf/anyOf error, down through the likeliest branches
    (`likeliest_branch`), the error reaching deepest into the value: what is wrong, not that
    no choice fits."""
    while branch := likeliest_branch(err, refuses):
        err = max(branch, key=lambda e: len(e.absolute_path))
    return err


def detect_kind(src: Source, folder: str) -> tuple[str | None, list[Diagnostic]]:
    data = src.data
    if not isinstance(data, dict):
        got = JSON_TYPES.get(type(data), type(data).__name__)
        return None, [src.diag((), f"a manifest must be a mapping of keys, got a {got}", "", "not-a-mapping")]
    kind = data.get("kind")
    if kind is None:
        inferred = FOLDER_KINDS.get(folder)
        if inferred:
            return inferred, []
        hint = "add `kind:` with one of " + ", ".join(KIND_NAMES)
        return None, [src.diag((), "missing `kind`", hint, "missing-kind")]
    if kind not in KIND_NAMES:
        guess = did_you_mean(str(kind), KIND_NAMES)
        hint = guess or "use one of " + ", ".join(KIND_NAMES)
        return None, [src.diag(("kind",), f"unknown kind '{kind}'", hint, "unknown-kind")]
    return kind, []


def check_schema(src: Source, kind: str) -> list[Diagnostic]:
    data = dict(src.data)
    data.setdefault("kind", kind)
    out: list[Diagnostic] = []
    root = load_schema(kind)
    for err in validator_for(kind).iter_errors(data):
        # jsonschema reports one `required` error per missing key, each naming them all
        out.extend(d for d in _explain(src, err, root) if d not in out)
    out = _one_per_typo(_one_per_value(out))
    out.sort(key=lambda d: (d.line, d.column))
    return out


def _one_per_value(found: list[Diagnostic]) -> list[Diagnostic]:
    """One mistake, one error: a value outside a list of allowed values (`provider: 0`) is
    also of the wrong type, and jsonschema says both; the list of what is allowed is kept."""
    listed = {(d.line, d.column, d.path) for d in found if d.code == "bad-value"}
    return [d for d in found if d.code != "wrong-type" or (d.line, d.column, d.path) not in listed]


def _one_per_typo(found: list[Diagnostic]) -> list[Diagnostic]:
    """One mistake, one error: a misspelt required key (`descripton:`) is an unknown key whose
    did-you-mean names the key, and the key it means is missing; the unknown key is kept."""
    meant = {
        (d.path.rpartition(".")[0] if "." in d.path else "", d.hint.removeprefix("did you mean "))
        for d in found
        if d.code == "unknown-key" and d.hint.startswith("did you mean ")
    }
    missing = {id(d): d.message.removeprefix("missing required key ") + "?" for d in found}
    return [d for d in found if d.code != "missing-key" or (d.path, missing[id(d)]) not in meant]


def _explain(src: Source, err: Any, root: dict[str, Any]) -> list[Diagnostic]:
    parts = tuple(err.absolute_path)
    if err.validator in ("anyOf", "oneOf"):
        return _any_of(src, err, parts, root)
    handler = _HANDLERS.get(err.validator)
    if handler is not None:
        return handler(src, err, parts)
    return [src.diag(parts, _generic(err), "", "schema")]


def _additional(src: Source, err: Any, parts: PathKey) -> list[Diagnostic]:
    allowed = set(err.schema.get("properties", {}))
    patterns = list(err.schema.get("patternProperties", {}))
    out = []
    for key in err.instance:
        if key in allowed or any(re.search(p, str(key)) for p in patterns):
            continue
        if not allowed and patterns:
            message = f"{key!r} is not a valid name"
            hint = "use letters, digits, _ and -, starting with a letter (at most 64)"
            out.append(src.diag((*parts, key), message, hint, "bad-name", key=True))
            continue
        if str(key).lower() in SECRET_KEYS:
            hint = (
                "secrets never go in manifests: put the value in an environment variable "
                "and name it with `api_key_env` (or `auth_token_env`)"
            )
        else:
            hint = did_you_mean(str(key), allowed) or "allowed keys: " + ", ".join(sorted(allowed))
        out.append(src.diag((*parts, key), f"unknown key '{key}'", hint, "unknown-key", key=True))
    return out


def _required(src: Source, err: Any, parts: PathKey) -> list[Diagnostic]:
    missing = [k for k in err.validator_value if k not in err.instance]
    hints = {
        "version": "add `version: 1` at the top",
        "kind": "add `kind:`",
        "dashboards": "e.g. dashboards: {overall: overall_dashboard.md}",
    }
    return [
        src.diag(parts, f"missing required key '{k}'", hints.get(k, f"add `{k}:`"), "missing-key")
        for k in missing
    ]


def _type(src: Source, err: Any, parts: PathKey) -> list[Diagnostic]:
    want = err.validator_value
    want_text = " or ".join(want) if isinstance(want, list) else want
    want_text = want_text.replace("object", "mapping").replace("array", "list")
    got = JSON_TYPES.get(type(err.instance), type(err.instance).__name__)
    shown = f" {err.instance!r}" if isinstance(err.instance, (str, int, float)) else ""
    hint = "quote it" if want_text == "string" else f"write a {want_text} here"
    if want_text == "integer" and isinstance(err.instance, str):
        hint = "write a number without quotes, e.g. 30"
    return [src.diag(parts, f"expected {want_text}, got {got}{shown}", hint, "wrong-type")]


def _enum(src: Source, err: Any, parts: PathKey) -> list[Diagnostic]:
    options = [str(o) for o in (err.validator_value if err.validator == "enum" else [err.validator_value])]
    guess = did_you_mean(str(err.instance), options)
    hint = guess or "use one of: " + ", ".join(options)
    return [src.diag(parts, f"{err.instance!r} is not allowed here", hint, "bad-value")]


def _pattern(src: Source, err: Any, parts: PathKey) -> list[Diagnostic]:
    pattern = err.validator_value
    if "A-Za-z_][A-Za-z0-9_]*" in pattern:
        return [
            src.diag(
                parts,
                f"{err.instance!r} is not an environment variable name",
                "name the variable that holds the secret (e.g. OPENAI_API_KEY), never the secret itself",
                "bad-env-name",
            )
        ]
    if pattern.startswith("^[A-Za-z][A-Za-z0-9_-]"):
        return [
            src.diag(
                parts,
                f"{err.instance!r} is not a valid name",
                "use letters, digits, _ and -, starting with a letter (at most 64)",
                "bad-name",
            )
        ]
    return [src.diag(parts, f"{err.instance!r} does not match {pattern}", "", "bad-value")]


def _any_of(src: Source, err: Any, parts: PathKey, root: dict[str, Any]) -> list[Diagnostic]:
    context = list(err.context or [])
    tagged = _tagged_union(src, err, parts, root)
    if tagged is not None:
        return tagged
    if context and all(c.validator == "type" for c in context):
        wants = []
        for c in context:
            v = c.validator_value
            wants.extend(v if isinstance(v, list) else [v])
        names = sorted({w.replace("object", "mapping").replace("array", "list") for w in wants})
        got = JSON_TYPES.get(type(err.instance), type(err.instance).__name__)
        return [src.diag(parts, f"expected {' or '.join(names)}, got {got}", "", "wrong-type")]
    from jsonschema.exceptions import best_match

    # the branch whose type fits the value explains the problem best (e.g. a mapping tool entry)
    fitting = [c for c in context if c.validator != "type" and not (c.validator == "anyOf" and not c.context)]
    deeper = best_match(fitting or context) if context else None
    if deeper is None:
        return [src.diag(parts, _generic(err), "", "schema")]
    return _explain(src, deeper, root)


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, object]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        resolved: dict[str, object] = root["$defs"][ref.rsplit("/", 1)[1]]
        return resolved
    return schema


def _tagged_union(src: Source, err: Any, parts: PathKey, root: dict[str, Any]) -> list[Diagnostic] | None:
    """A union of mappings told apart by a tag (`strategy: compact`, or which of `agent:` /
    `loop:` is present) is explained by the branch the tag picks, all of its problems; None
    when the union is not of that shape."""
    if not isinstance(err.instance, dict):
        return None
    branches = [_resolve(o, root) for o in err.validator_value]
    if not all(b.get("type") == "object" and "properties" in b for b in branches):
        return None
    chosen = _branch_by_const(src, err.instance, branches, parts)
    if isinstance(chosen, list):
        return chosen
    if chosen is None:
        chosen = _branch_by_key(err.instance, branches)
    if chosen is None:
        return None
    own = [c for c in err.context or [] if c.relative_schema_path and c.relative_schema_path[0] == chosen]
    out: list[Diagnostic] = []
    for sub in own:
        out.extend(_explain(src, sub, root))
    return out or None


def _branch_by_const(
    src: Source, instance: dict[str, Any], branches: list[dict[str, Any]], parts: PathKey
) -> int | list[Diagnostic] | None:
    """The branch whose constant tag property matches; a diagnostic when the tag has a value no
    branch takes; None when the branches have no common constant property."""
    for name in branches[0]["properties"]:
        consts = [b["properties"].get(name, {}).get("const") for b in branches]
        if any(c is None for c in consts):
            continue
        defaults = [b["properties"][name].get("default") for b in branches]
        value = instance.get(name, next((d for d in defaults if d is not None), None))
        if value in consts:
            return consts.index(value)
        options = [str(c) for c in consts]
        hint = did_you_mean(str(value), options) or "use one of: " + ", ".join(options)
        return [src.diag((*parts, name), f"{value!r} is not allowed here", hint, "bad-value")]
    return None


def _branch_by_key(instance: dict[str, Any], branches: list[dict[str, Any]]) -> int | None:
    """The branch one of whose required keys the mapping has; else the first branch (so a typo
    like `agnt:` is reported against the simplest shape)."""
    for index, branch in enumerate(branches):
        if set(branch.get("required", [])) & set(instance):
            return index
    return 0


def _count(src: Source, err: Any, parts: PathKey) -> list[Diagnostic]:
    if err.validator == "maxProperties" and err.validator_value == 1:
        return [
            src.diag(
                parts,
                "a tool entry with config must have exactly one key: the tool name",
                "write `- NAME: {key: value}` (indent the config under the name)",
                "bad-entry",
            )
        ]
    return [src.diag(parts, _generic(err), "", "schema")]


def _generic(err: Any) -> str:
    message = str(err.message)
    return message if len(message) < 200 else message[:197] + "..."


_HANDLERS = {
    "additionalProperties": _additional,
    "required": _required,
    "type": _type,
    "enum": _enum,
    "const": _enum,
    "pattern": _pattern,
    "maxProperties": _count,
    "minProperties": _count,
}
