"""An agent's `output_schema`: inline, or a JSON/YAML file under `schemas/` on the search path
(a built-in agent looks only among the built-ins, as for prompts), checked as a JSON Schema
whose root is an object (what both APIs' structured output accept)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

from flowrun.errors import ManifestError
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.project import Loaded, Project, display_path
from flowrun.manifest.specs import AgentManifest
from flowrun.manifest.yaml_source import load_source
from flowrun.paths import is_file

SCHEMAS_DIR = "schemas"
HINT = "an object schema, inline or a file under schemas/ (docs: how-to/structured-output.md)"


def schema_file(loaded: Loaded[AgentManifest], project: Project) -> Path | None:
    name = loaded.spec.output_schema
    if not isinstance(name, str):
        return None
    roots = [loaded.root] if loaded.builtin else project.roots
    parts = PurePosixPath(name).parts
    names = [name, *([str(PurePosixPath(*parts[1:]))] if len(parts) > 1 and parts[0] == SCHEMAS_DIR else [])]
    for root in roots:
        folder = (root / SCHEMAS_DIR).resolve()
        for each in names:  # `citations.json`, or `schemas/citations.json` as written from the root
            candidate = (folder / each).resolve()
            if candidate.is_relative_to(folder) and is_file(candidate):
                return candidate
    return None


def resolve_output_schema(loaded: Loaded[AgentManifest], project: Project) -> dict[str, object] | None:
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


SchemaPath = tuple[str | int, ...]
ROOT_URI = "urn:flowrun:output-schema"
ROOT_OBJECT = "the output schema's root must be `type: object` (wrap a list in an object property)"
NOT_SCHEMAS = frozenset({"enum", "const", "default", "examples"})  # values, not subschemas


def schema_defects(schema: object) -> list[tuple[SchemaPath, str]]:
    """Every reason the schema is not a usable output schema, each with its path inside the
    schema: not a JSON Schema of its draft (`$schema`, else 2020-12), a `$ref` that does not
    resolve inside it, a root that is not an object. Empty when it is usable."""
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    if not isinstance(schema, dict):
        return [((), "an output schema must be a JSON Schema object (a mapping)")]
    cls = validator_for(schema, default=Draft202012Validator)
    meta = cls(cls.META_SCHEMA)
    errors = sorted(meta.iter_errors(schema), key=lambda e: [str(p) for p in e.path])
    found: list[tuple[SchemaPath, str]] = [
        (tuple(e.path), f"invalid JSON Schema: {e.message}") for e in errors
    ]
    if not found:
        found += _unresolved_refs(schema, cls)
    if not found and schema.get("type") != "object":
        found.append(((), ROOT_OBJECT))
    return found


def schema_problem(schema: object) -> tuple[SchemaPath, str] | None:
    """The first reason the schema is not a usable output schema, or None."""
    found = schema_defects(schema)
    return found[0] if found else None


def _unresolved_refs(schema: dict[str, Any], cls: Any) -> list[tuple[SchemaPath, str]]:
    """`$ref`s that point nowhere inside the schema (the APIs' structured output resolves only
    those, and validating an answer against a dangling one would fail at run time)."""
    from referencing import Registry, Resource
    from referencing.exceptions import Unresolvable

    spec = cls.META_SCHEMA.get("$schema", "")
    resource = Resource.from_contents(schema, default_specification=_specification(spec))
    registry = Registry().with_resource(ROOT_URI, resource).crawl()
    out: list[tuple[SchemaPath, str]] = []
    for path, ref, base in _refs(schema, (), ROOT_URI):
        try:
            registry.resolver(base_uri=base).lookup(ref)
        except Unresolvable:
            message = f"$ref '{ref}' does not resolve inside the schema"
            out.append(((*path, "$ref"), f"{message} (refer to its own parts, e.g. #/$defs/NAME)"))
    return out


def _specification(uri: str) -> Any:
    from referencing.jsonschema import DRAFT202012, specification_with

    return specification_with(uri, default=DRAFT202012)


def _refs(node: object, path: SchemaPath, base: str) -> Iterator[tuple[SchemaPath, str, str]]:
    from urllib.parse import urljoin

    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _refs(item, (*path, i), base)
        return
    if not isinstance(node, dict):
        return
    if isinstance(node.get("$id"), str):
        base = urljoin(base, node["$id"])
    if isinstance(node.get("$ref"), str):
        yield path, node["$ref"], base
    for key, value in node.items():
        if key not in NOT_SCHEMAS:
            yield from _refs(value, (*path, key), base)


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
        return [schema_src.diag(p, m, HINT, "bad-schema") for p, m in schema_defects(schema_src.data)]
    defects = schema_defects(spec.output_schema)
    return [src.diag(("output_schema", *p), m, HINT, "bad-schema") for p, m in defects]
