"""The `json_schema` grader: the output, parsed as JSON, must be valid against a JSON Schema
(inline, or a file next to the eval set)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from pydantic import Field

from flowrun.errors import FlowrunError
from flowrun.evals.grading import Checked, GraderKind, GraderScore, json_of, scored, short
from flowrun.manifest.checks.eval_files import GraderAt
from flowrun.manifest.eval_specs import GraderBase
from flowrun.manifest.kinds import Problem
from flowrun.manifest.spec_base import Strict
from flowrun.types import decode_json

if TYPE_CHECKING:
    from flowrun.evals.outcome import Outcome


class JsonSchemaCheck(Strict):
    schema_: dict[str, object] | str = Field(
        alias="schema",
        description="A JSON Schema, inline or as a file path relative to the eval set.",
    )
    file: str | None = Field(
        default=None,
        description="The JSON file in the run folder (default: the workflow's `output`, else the final "
        "answer).",
    )


class JsonSchemaGrader(GraderBase):
    kind: ClassVar[str] = "json_schema"
    json_schema: JsonSchemaCheck = Field(
        description="The output, parsed as JSON, must be valid against a schema."
    )


class JsonSchemaKind(GraderKind):
    name = "json_schema"
    spec = JsonSchemaGrader

    def files(self, grader: JsonSchemaGrader) -> list[str]:
        schema = grader.json_schema.schema_
        return [schema] if isinstance(schema, str) else []

    def check(self, grader: JsonSchemaGrader, at: GraderAt) -> list[Problem]:
        schema = grader.json_schema.schema_
        if isinstance(schema, str):
            try:
                schema = decode_json((at.here / schema).read_text(encoding="utf-8"))
            except OSError:
                hint = "the path is relative to the eval set"
                return [(f"schema file '{grader.json_schema.schema_}' not found", hint, "missing-file")]
            except ValueError as e:
                return [(f"schema file '{grader.json_schema.schema_}' is not JSON: {e}", "", "bad-file")]
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as e:
            return [(f"not a valid JSON Schema: {e.message}", "", "bad-schema")]
        return []

    def grade(self, grader: JsonSchemaGrader, name: str, outcome: Outcome, here: Path) -> GraderScore:
        from jsonschema import Draft202012Validator

        spec = grader.json_schema
        schema = spec.schema_
        if isinstance(schema, str):
            try:
                schema = decode_json((here / schema).read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                raise FlowrunError(f"cannot read the schema {spec.schema_}: {e}") from None
        data, what = json_of(outcome, spec.file)
        validator = Draft202012Validator(schema)
        errors = sorted(validator.iter_errors(cast("Any", data)), key=lambda e: list(e.path))
        if not errors:
            return scored(grader, name, [Checked(True, f"{what} is valid against the schema")])
        first = errors[0]
        at = "/".join(str(p) for p in first.path) or "(the root)"
        return scored(grader, name, [Checked(False, f"{what} is not valid at {at}: {short(first.message)}")])


KIND = JsonSchemaKind()
