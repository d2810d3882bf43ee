"""Every grader an eval set may use, registered, and how a run is graded by one. A new grader is
its module (evals/graders/) plus one line in the tuple below, or, from outside flowrun, one
`register_grader` call before loading an eval set. Registering it also registers its manifest
side with manifest/kinds.py, so `validate`, the schema and `flowrun eval` know it as well.

Importing this module is what makes eval sets readable: the CLI and the API import it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from flowrun.errors import FlowrunError
from flowrun.evals.graders import budget, file, json_path, json_schema, judge, output, status, trajectory
from flowrun.evals.grading import GraderKind, GraderScore, failed, templated
from flowrun.manifest import kinds as manifest_kinds
from flowrun.manifest.eval_specs import GraderBase

if TYPE_CHECKING:
    from flowrun.evals.outcome import Outcome

BUILTIN_GRADERS: tuple[GraderKind, ...] = (
    output.KIND,
    json_path.KIND,
    json_schema.KIND,
    file.KIND,
    trajectory.KIND,
    status.KIND,
    budget.KIND,
    judge.KIND,
)

GRADERS: dict[str, GraderKind] = {kind.name: kind for kind in BUILTIN_GRADERS}
manifest_kinds.install(graders=BUILTIN_GRADERS, builtin=True)


def register_grader(kind: GraderKind) -> Callable[[], None]:
    """Add a grader kind; returns what undoes it."""
    GRADERS[kind.name] = kind
    manifest_kinds.install(graders=[kind])

    def undo() -> None:
        GRADERS.pop(kind.name, None)
        manifest_kinds.uninstall("grader", kind.name)

    return undo


def grade(
    grader: GraderBase, name: str, outcome: Outcome, variables: Mapping[str, object], here: Path
) -> GraderScore:
    """Score one grader that is not a judge (judges: evals/judges.py), its texts rendered
    against the case first."""
    try:
        rendered = type(grader).model_validate(templated(grader.model_dump(by_alias=True), variables))
    except FlowrunError as e:
        return failed(grader, name, e.message)
    try:
        return GRADERS[grader.kind].grade(rendered, name, outcome, here)
    except FlowrunError as e:
        return failed(grader, name, e.message)
