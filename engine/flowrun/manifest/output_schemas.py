"""An agent's `output_schema`: inline, or a JSON/YAML file under `schemas/` on the search path
(a built-in agent looks only among the built-ins, as for prompts), checked as a JSON Schema
whose root is an object (what both APIs' structured output accept)."""

from __future__ import annotations

from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

from flowrun.errors import ManifestError
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.project import Loaded, Project, display_path
from flowrun.manifest.specs import AgentManifest
from flowrun.manifest.yaml_source import load_source

SCHEMAS_DIR = "schemas"
HINT = "see `output_schema` in the README: an object schema, inline or a file under schemas/"


def schema_file(loaded: Loaded[AgentManifest], project: Project) -> Path | None:
    name = loaded.spec.output_schema
    if not isinstance(name, str):
        return None
    roots = [loaded.root] if loaded.builtin else project.roots
    for root in roots:
        folder = (root / SCHEMAS_DIR).resolve()
        candidate = (folder / name).resolve()
        if candidate.is_relative_to(folder) and candidate.is_file():
            return candidate
    return None


def resolve_output_schema(loaded: Loaded[AgentManifest], project: Project) -> dict[str, Any] | None:
    """The agent's output schema as a dict, or None; ManifestError when it cannot be used."""
    spec = loaded.spec
    if spec.output_schema is None:
        return None
    if isinstance(spec.output_schema, dict):
        schema, where = spec.output_schema, f"the output_schema of agent '{spec.name}'"
    else:
        path = schema_file(loaded, project)
        if path is None:
            raise ManifestError(
                f"output_schema file '{spec.output_schema}' of agent '{spec.name}' not found", HINT
            )
        schema, where = _read_schema(path, path.stat().st_mtime_ns), display_path(path)
    problem = schema_problem(schema)
    if problem is not None:
        raise ManifestError(f"{where}: {problem[1]}", HINT)
    return schema


@cache
def _read_schema(path: Path, stamp: int) -> Any:
    src, diags = load_source(path, display_path(path))
    errors = [d for d in diags if d.severity == "error"]
    if errors:
        raise ManifestError(errors[0].text(), HINT)
    return src.data


def schema_problem(schema: Any) -> tuple[tuple[str | int, ...], str] | None:
    """(path inside the schema, message) of why it is not a usable output schema, or None."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if not isinstance(schema, dict):
        return (), "an output schema must be a JSON Schema object (a mapping)"
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as e:
        return tuple(e.path), f"invalid JSON Schema: {e.message}"
    if schema.get("type") != "object":
        return (), "the output schema's root must be `type: object` (wrap a list in an object property)"
    return None


def output_schema_diagnostics(loaded: Loaded[AgentManifest], project: Project) -> list[Diagnostic]:
    """For `validate`: the schema file exists and parses, and is a usable JSON Schema."""
    spec, src = loaded.spec, loaded.source
    if spec.output_schema is None:
        return []
    if isinstance(spec.output_schema, str):
        name = spec.output_schema
        if PurePosixPath(name).is_absolute() or ".." in PurePosixPath(name).parts:
            return [src.diag(("output_schema",), f"output_schema '{name}' leaves schemas/", HINT, "bad-path")]
        path = schema_file(loaded, project)
        if path is None:
            looked = ", ".join(display_path(r / SCHEMAS_DIR) for r in project.roots)
            message = f"output_schema file '{name}' not found"
            return [src.diag(("output_schema",), message, f"looked in {looked}", "missing-schema")]
        schema_src, diags = load_source(path, display_path(path))
        if any(d.severity == "error" for d in diags):
            return diags
        found = schema_problem(schema_src.data)
        return [] if found is None else [schema_src.diag(found[0], found[1], HINT, "bad-schema")]
    found = schema_problem(spec.output_schema)
    if found is None:
        return []
    return [src.diag(("output_schema", *found[0]), found[1], HINT, "bad-schema")]
