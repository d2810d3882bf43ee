"""Rules within an agent manifest's `guardrails:` (each problem at its line): a regex that does
not compile, a schema that is not a JSON Schema, `retry` on an input guardrail, `argument`
outside a tool guardrail. Rules across the project are in manifest/guardrails/checks.py."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.guardrails.specs import KIND_KEYS
from flowrun.manifest.yaml_source import PathKey, Source
from flowrun.regexes import compile_regex


def entries(raw: object) -> Iterator[tuple[PathKey, str, Mapping[str, object]]]:
    """Every guardrail of a raw `guardrails:` mapping: (its key path, where, the mapping)."""
    if not isinstance(raw, dict):
        return
    for where in ("input", "output"):
        found = raw.get(where)
        for i, guard in enumerate(found if isinstance(found, list) else []):
            if isinstance(guard, dict):
                yield ("guardrails", where, i), where, guard
    groups = raw.get("tools")
    for j, group in enumerate(groups if isinstance(groups, list) else []):
        checks = group.get("check") if isinstance(group, dict) else None
        for i, guard in enumerate(checks if isinstance(checks, list) else []):
            if isinstance(guard, dict):
                yield ("guardrails", "tools", j, "check", i), "tools", guard


def guardrail_problems(src: Source, raw: object) -> list[Diagnostic]:
    """The rules a schema cannot say, for an agent manifest's `guardrails:`."""
    out: list[Diagnostic] = []
    for path, where, guard in entries(raw):
        if not any(key in guard for key in KIND_KEYS):
            message = "a guardrail needs a kind key: match:, forbid:, schema:, python: or judge:"
            hint = "e.g. {forbid: '(?i)password'} or {judge: reviewer}"
            out.append(src.diag(path, message, hint, "invalid"))
        out += _regex_problems(src, path, where, guard)
        if where == "input" and guard.get("on_fail") == "retry":
            message = "an input guardrail cannot retry: the agent's task is not the model's to change"
            out.append(src.diag((*path, "on_fail"), message, "use on_fail: stop or warn", "invalid"))
        if "schema" in guard:
            out += _schema_problems(src, (*path, "schema"), guard["schema"])
    return out


def _regex_problems(src: Source, path: PathKey, where: str, guard: Mapping[str, object]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for key in ("match", "forbid"):
        pattern = guard.get(key)
        if not isinstance(pattern, str):
            continue
        try:
            compile_regex(pattern)
        except re.error as e:
            hint = "quote the pattern with single quotes in YAML so backslashes stay"
            out.append(src.diag((*path, key), f"invalid regex {pattern!r}: {e}", hint, "bad-regex"))
    if "argument" in guard and where != "tools":
        message = "`argument` picks a tool call's argument: it applies to tool guardrails only"
        out.append(
            src.diag((*path, "argument"), message, "remove it, or move the guardrail under tools:", "invalid")
        )
    return out


def _schema_problems(src: Source, path: PathKey, schema: object) -> list[Diagnostic]:
    """Where the schema breaks its draft's meta-schema (`$schema`, else 2020-12)."""
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    if not isinstance(schema, dict):
        return []  # the spec's schema says it must be a mapping
    cls = validator_for(schema, default=Draft202012Validator)
    errors = sorted(cls(cls.META_SCHEMA).iter_errors(schema), key=lambda e: [str(p) for p in e.path])
    hint = "a JSON Schema, e.g. {type: object, required: [title]}"
    return [
        src.diag((*path, *e.path), f"invalid JSON Schema: {e.message}", hint, "bad-schema")
        for e in errors[:3]
    ]
