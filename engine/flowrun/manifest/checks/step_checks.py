"""Checks of a workflow's `steps:` that the schema cannot make: every template a step holds
(with the names an enclosing foreach adds), paths that leave the run folder, and each step
kind's own checks (a foreach's list source, parallel branches writing to the same place)."""

from __future__ import annotations

from dataclasses import dataclass

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.graph import YamlPath, walk_steps
from flowrun.manifest.kinds import step_kind
from flowrun.manifest.project import Loaded
from flowrun.manifest.specs import StepSpec, WorkflowManifest
from flowrun.paths import long_name, safe_relative


@dataclass(frozen=True, slots=True)
class StepTemplate:
    text: str
    parts: YamlPath
    expression: bool  # `if:` and `until:` are bare expressions
    names: frozenset[str] = frozenset()  # what the enclosing foreach adds (its item, `index`)
    path: bool = False  # renders to a path in the run folder


def step_templates(steps: list[StepSpec] | None) -> list[StepTemplate]:
    found: list[StepTemplate] = []
    for at in walk_steps(steps):
        if at.step.if_:
            found.append(StepTemplate(at.step.if_, (*at.parts, "if"), True, at.names))
        for t in step_kind(at.step).templates(at.step):
            found.append(StepTemplate(t.text, (*at.parts, *t.parts), t.expression, at.names, t.path))
    return found


def check_steps(wf: Loaded[WorkflowManifest]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for at in walk_steps(wf.spec.steps):
        out += step_kind(at.step).check(at.step, at, wf)
    for template in step_templates(wf.spec.steps):
        if template.path and not safe_relative(template.text):
            message = f"{template.parts[-1]} '{template.text}' leaves the run folder"
            hint = "use a relative path without '..'"
            out.append(wf.source.diag(template.parts, message, hint, "bad-path"))
        elif template.path and "{" not in template.text and (too_long := long_name(template.text)):
            message = f"{template.parts[-1]}: {too_long}"
            out.append(wf.source.diag(template.parts, message, "shorten it", "bad-path"))
    return out
