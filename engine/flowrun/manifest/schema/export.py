"""JSON Schema (draft 2020-12) for every manifest kind, generated from the pydantic specs.
`schema/*.schema.json` are these files committed; a test fails when they drift."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
# the manifest kinds, the keys of specs.KINDS (a test keeps them equal), named here as well so
# that `flowrun schema` and validate's first look at a file need not import the specs
KIND_NAMES = ("workflow", "agent", "tool", "models", "script", "test", "evalset")
# folders whose every manifest is of one kind, so `kind:` may be left out there
FOLDER_KINDS = {"agents.d": "agent", "tools.d": "tool", "models.d": "models"}


def kind_schema(kind: str) -> dict[str, Any]:
    from flowrun.manifest.specs import KINDS

    model = KINDS[kind]
    schema = _tidy(model.model_json_schema(mode="validation", by_alias=True))
    folder = next((name for name, implied in FOLDER_KINDS.items() if implied == kind), None)
    if folder is not None:
        # an editor or check-jsonschema cannot see the folder: accept the manifest without `kind`
        schema["required"] = [key for key in schema.get("required", []) if key != "kind"]
        schema["properties"]["kind"]["description"] = (
            f"`{kind}`; may be left out inside the {folder}/ folder, which implies it."
        )
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": f"https://flowrun.dev/schema/{kind}.schema.json",
        **schema,
        "title": f"flowrun {kind} manifest",
    }


def schema_text(kind: str) -> str:
    return json.dumps(kind_schema(kind), indent=2, ensure_ascii=False) + "\n"


def write_all(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for kind in KIND_NAMES:
        path = folder / f"{kind}.schema.json"
        path.write_text(schema_text(kind), encoding="utf-8")
        written.append(path)
    return written


def _tidy(node: object, top: bool = True) -> Any:
    """Make pydantic's output read like a hand-written schema: an optional field is its type
    (not anyOf [type, null]), and per-property titles and null defaults are dropped."""
    if isinstance(node, list):
        return [_tidy(item, False) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _tidy(v, False) for k, v in node.items()}
    options = out.get("anyOf")
    if isinstance(options, list) and "default" in out and out["default"] is None:
        rest = [o for o in options if o != {"type": "null"}]
        if len(rest) != len(options):
            out.pop("anyOf")
            if len(rest) == 1:
                out = {**rest[0], **out}
            else:
                out["anyOf"] = rest
    if "patternProperties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False  # a mapping keyed by names: other keys are errors
    if out.get("default", 0) is None:
        out.pop("default")
    if not top and isinstance(out.get("title"), str) and "properties" not in out:
        out.pop("title")
    return out
