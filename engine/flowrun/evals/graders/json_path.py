"""The `json_path` grader: the value at a JSON path of the output (parsed as JSON) must equal a
given one."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from flowrun.errors import FlowrunError
from flowrun.evals.grading import Checked, GraderKind, GraderScore, json_of, scored, short
from flowrun.manifest.eval_specs import GraderBase
from flowrun.manifest.spec_base import Strict

if TYPE_CHECKING:
    from flowrun.evals.outcome import Outcome

PATH_STEP = re.compile(r"""\.([A-Za-z_][A-Za-z0-9_-]*)|\[(-?\d+)\]|\[['"]([^'"]*)['"]\]""")


class JsonPathCheck(Strict):
    path: str = Field(
        min_length=1,
        description="A JSON path into the output parsed as JSON: `$`, then `.key`, `[index]` or "
        "`['key']` steps (e.g. `$.citations[0].source`).",
    )
    equals: object = Field(description="The value found there must equal this.")
    file: str | None = Field(
        default=None,
        description="The JSON file in the run folder (default: the workflow's `output`, else the final "
        "answer).",
    )


class JsonPathGrader(GraderBase):
    kind: ClassVar[str] = "json_path"
    json_path: JsonPathCheck = Field(description="A value of the JSON output that must equal a given one.")


class JsonPathKind(GraderKind):
    name = "json_path"
    spec = JsonPathGrader

    def grade(self, grader: JsonPathGrader, name: str, outcome: Outcome, here: Path) -> GraderScore:
        spec = grader.json_path
        data, what = json_of(outcome, spec.file)
        found, value = json_path(data, spec.path)
        if not found:
            return scored(grader, name, [Checked(False, f"{spec.path} is not in {what}")])
        same = value == spec.equals
        detail = f"{spec.path} of {what} equals {spec.equals!r}" + (
            "" if same else f"; it is {short(repr(value))}"
        )
        return scored(grader, name, [Checked(same, detail)])


def json_path(value: object, path: str) -> tuple[bool, object]:
    """(found, the value) at `path`: `$` then `.key`, `[index]` or `['key']` steps."""
    rest = path.strip()
    if not rest.startswith("$"):
        raise FlowrunError(f"JSON path {path!r} must start with $", "e.g. $.citations[0].source")
    rest = rest[1:]
    while rest:
        step = PATH_STEP.match(rest)
        if step is None:
            raise FlowrunError(f"cannot read JSON path {path!r} at {rest!r}", "steps: .key, [index], ['key']")
        key, index, quoted = step.groups()
        if index is not None:
            if not isinstance(value, list) or not -len(value) <= int(index) < len(value):
                return False, None
            value = value[int(index)]
        else:
            name = key if key is not None else quoted
            if not isinstance(value, dict) or name not in value:
                return False, None
            value = value[name]
        rest = rest[step.end() :]
    return True, value


KIND = JsonPathKind()
