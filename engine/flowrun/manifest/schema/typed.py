"""Check data that is not a flowrun manifest (`.mcp.json`, a Claude Code agent's front matter,
a skill's SKILL.md) against its pydantic model, each problem a Diagnostic at its line with a
did-you-mean for unknown keys."""

from __future__ import annotations

from typing import Any

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.schema.check import did_you_mean
from flowrun.manifest.specs import Strict
from flowrun.manifest.yaml_source import PathKey, Source


def model_fields(model: type[Strict]) -> set[str]:
    """The keys a model takes, by their spelling in files (aliases included)."""
    return {field.alias or name for name, field in model.model_fields.items()}


def check_model(
    src: Source, model: type[Strict], data: object, prefix: PathKey = ()
) -> tuple[Strict | None, list[Diagnostic]]:
    """`data` (found at `prefix` in `src`) as `model`, or None and the problems."""
    from pydantic import ValidationError

    try:
        return model.model_validate(data), []
    except ValidationError as e:
        return None, [_diagnostic(src, model, data, prefix, err) for err in e.errors()]


def _diagnostic(src: Source, model: type[Strict], data: Any, prefix: PathKey, err: Any) -> Diagnostic:
    loc = tuple(p for p in err["loc"] if isinstance(p, str | int))
    where = (*prefix, *loc)
    if err["type"] == "extra_forbidden":
        key = str(loc[-1])
        allowed = _allowed_at(model, loc[:-1])
        hint = did_you_mean(key, allowed) or "allowed keys: " + ", ".join(sorted(allowed))
        return src.diag(where, f"unknown key '{key}'", hint, "unknown-key", key=True)
    if err["type"] == "missing":
        return src.diag(where[:-1], f"missing required key '{loc[-1]}'", f"add `{loc[-1]}:`", "missing-key")
    message = str(err["msg"])
    if err["type"] == "string_pattern_mismatch":
        message = f"{err['input']!r} is not a valid name"
        return src.diag(where, message, "use letters, digits, _ and -, starting with a letter", "bad-name")
    return src.diag(where, message, "", "schema")


def _allowed_at(model: type[Strict], loc: tuple[str | int, ...]) -> set[str]:
    """The keys the model takes at `loc` (descending through nested models and mappings)."""
    current: object = model
    for part in loc:
        if isinstance(part, int) or not isinstance(current, type) or not issubclass(current, Strict):
            current = _inner_model(current)
            continue
        fields = {field.alias or name: field for name, field in current.model_fields.items()}
        field = fields.get(part)
        current = _inner_model(field.annotation) if field is not None else _inner_model(current)
    return model_fields(current) if isinstance(current, type) and issubclass(current, Strict) else set()


def _inner_model(annotation: object) -> object:
    """The Strict model inside `X`, `X | None`, `dict[str, X]` or `list[X]`, if any."""
    if isinstance(annotation, type) and issubclass(annotation, Strict):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _inner_model(arg)
        if found is not None:
            return found
    return None
