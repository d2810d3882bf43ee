"""A docker-agent file checked against docker-agent's own JSON Schema (agent-schema.json, shipped
here with its licence: NOTICE.md) before it is read, each problem at its line: a key the schema
does not know (with a did-you-mean), a value of the wrong type, a toolset type it does not have."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.schema.check import did_you_mean, likeliest_error
from flowrun.manifest.yaml_source import Source

if TYPE_CHECKING:
    from jsonschema import Draft7Validator

SCHEMA_FILE = Path(__file__).with_name("agent-schema.json")


@cache
def _validator() -> Draft7Validator:
    from jsonschema import Draft7Validator

    return Draft7Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def schema_problems(src: Source) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for err in _validator().iter_errors(src.data):
        path = tuple(err.absolute_path)
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            known = set(err.schema.get("properties", {}))
            for key in sorted(set(err.instance) - known):
                hint = did_you_mean(str(key), known) or "known keys: " + ", ".join(sorted(known))
                message = f"unknown key '{key}' (docker-agent's schema has no such key here)"
                out.append(src.diag((*path, key), message, hint, "unknown-key", key=True))
            continue
        best = likeliest_error(err)  # of a oneOf/anyOf error, what is wrong in the value
        where = tuple(best.absolute_path)
        message = " ".join(str(best.message).split())[:200]
        out.append(src.diag(where, f"docker-agent's schema: {message}", "", "schema"))
    return out
