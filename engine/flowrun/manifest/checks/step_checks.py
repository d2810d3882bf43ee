"""Checks of a workflow's `steps:` that the schema cannot make: every template a step holds
(with the names a foreach adds for its body), a foreach's list source, paths that leave the run
folder, and parallel branches that would write to the same place."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.graph import YamlPath
from flowrun.manifest.project import Loaded
from flowrun.manifest.schema_check import did_you_mean
from flowrun.manifest.specs import (
    AgentStep,
    ForeachStep,
    LoopStep,
    ParallelStep,
    Step,
    WorkflowManifest,
)
from flowrun.manifest.templates import WORKFLOW_BUILTINS, analyse

STEP_PATH_KEYS = ("workdir", "output")


@dataclass(frozen=True, slots=True)
class StepTemplate:
    text: str
    parts: YamlPath
    expression: bool  # `if:` and `until:` are bare expressions
    names: frozenset[str] = frozenset()  # what the enclosing foreach adds (its item, `index`)


def step_templates(steps: list[Step] | None) -> list[StepTemplate]:
    return list(_templates(steps or [], ("steps",), frozenset()))


def _templates(steps: list[Step], parts: YamlPath, names: frozenset[str]) -> Iterator[StepTemplate]:
    for i, step in enumerate(steps):
        yield from _step_templates(step, (*parts, i), names)


def _step_templates(step: Step, here: YamlPath, names: frozenset[str]) -> Iterator[StepTemplate]:
    if step.if_:
        yield StepTemplate(step.if_, (*here, "if"), True, names)
    if isinstance(step, AgentStep):
        for key in ("task", *STEP_PATH_KEYS):
            if text := getattr(step, key):
                yield StepTemplate(text, (*here, key), False, names)
    elif isinstance(step, LoopStep):
        if step.loop.until:
            yield StepTemplate(step.loop.until, (*here, "loop", "until"), True, names)
        yield from _templates(step.loop.steps, (*here, "loop", "steps"), names)
    elif isinstance(step, ParallelStep):
        for j, branch in enumerate(step.parallel):
            yield from _step_templates(branch, (*here, "parallel", j), names)
    elif isinstance(step, ForeachStep):
        body, where = step.foreach, (*here, "foreach")
        for key in ("file", "collect"):
            if text := getattr(body, key):
                yield StepTemplate(text, (*where, key), False, names)
        yield from _step_templates(body.step, (*where, "step"), names | {body.as_, "index"})


def check_steps(wf: Loaded[WorkflowManifest]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for step, parts in _all_steps(wf.spec.steps or [], ("steps",)):
        if isinstance(step, ForeachStep):
            out += _check_foreach(wf, step, parts)
        elif isinstance(step, ParallelStep):
            out += _check_parallel(wf, step, parts)
    for template in step_templates(wf.spec.steps):
        key = template.parts[-1]
        if key in ("workdir", "output", "file", "collect") and not _safe_relative(template.text):
            message = f"{key} '{template.text}' leaves the run folder"
            out.append(
                wf.source.diag(template.parts, message, "use a relative path without '..'", "bad-path")
            )
    return out


def _all_steps(steps: list[Step], parts: YamlPath) -> Iterator[tuple[Step, YamlPath]]:
    for i, step in enumerate(steps):
        yield step, (*parts, i)
        if isinstance(step, LoopStep):
            yield from _all_steps(step.loop.steps, (*parts, i, "loop", "steps"))


def _check_foreach(wf: Loaded[WorkflowManifest], step: ForeachStep, parts: YamlPath) -> list[Diagnostic]:
    where = (*parts, "foreach")
    return _item_name(wf, step, where) + _shared_paths(wf, step, where) + _list_source(wf, step, where)


def _item_name(wf: Loaded[WorkflowManifest], step: ForeachStep, where: YamlPath) -> list[Diagnostic]:
    """`as:` must not hide `index` or a name the engine gives every template."""
    name = step.foreach.as_
    if name != "index" and name not in WORKFLOW_BUILTINS:
        return []
    message = f"foreach `as: {name}` hides the template variable '{name}'"
    hint = "name the item something else, e.g. `as: item`"
    return [wf.source.diag((*where, "as"), message, hint, "invalid")]


def _shared_paths(wf: Loaded[WorkflowManifest], step: ForeachStep, where: YamlPath) -> list[Diagnostic]:
    """A body `workdir`/`output` that names neither the item nor `index` is the same folder or
    file for every item: the items would overwrite each other's work."""
    body, out = step.foreach, []
    for key in STEP_PATH_KEYS:
        text = getattr(body.step, key)
        if not text:
            continue
        info = analyse(text)
        if info.error is None and not {body.as_, "index"} & set(info.variables):
            message = f"every item of this foreach gets the same {key} '{text}'"
            hint = "put {{ index }} (or the item) in it, e.g. answers/{{ index }}.md"
            out.append(
                wf.source.diag((*where, "step", key), message, hint, "shared-path", severity="warning")
            )
    return out


def _list_source(wf: Loaded[WorkflowManifest], step: ForeachStep, where: YamlPath) -> list[Diagnostic]:
    body, src = step.foreach, wf.source
    if (body.input is None) == (body.file is None):
        hint = "name an input of type list (`input:`) or a JSON/JSONL file an earlier step writes (`file:`)"
        return [src.diag(where, "a foreach needs exactly one of `input` or `file`", hint, "invalid")]
    if body.input is None:
        return []
    declared = wf.spec.inputs.get(body.input)
    if declared is None:
        hint = did_you_mean(body.input, set(wf.spec.inputs)) or "declare it under `inputs:` with `type: list`"
        return [
            src.diag(
                (*where, "input"), f"foreach input '{body.input}' is not declared", hint, "unknown-input"
            )
        ]
    if declared.type != "list":
        message = f"foreach input '{body.input}' has type {declared.type}, not list"
        return [src.diag((*where, "input"), message, f"set `type: list` on input '{body.input}'", "invalid")]
    return []


def _check_parallel(wf: Loaded[WorkflowManifest], step: ParallelStep, parts: YamlPath) -> list[Diagnostic]:
    """Two branches with the same `workdir` or `output` would overwrite each other's files."""
    out: list[Diagnostic] = []
    for key in STEP_PATH_KEYS:
        seen: dict[str, int] = {}
        for j, branch in enumerate(step.parallel):
            value = getattr(branch, key)
            if not value:
                continue
            if value.strip() in seen:
                message = f"parallel branches {seen[value.strip()]} and {j} share the {key} '{value}'"
                hint = f"give each branch its own {key}"
                out.append(wf.source.diag((*parts, "parallel", j, key), message, hint, "invalid"))
            seen.setdefault(value.strip(), j)
    return out


def _safe_relative(path: str) -> bool:
    p = PurePosixPath(path.replace("\\", "/"))
    return not p.is_absolute() and ".." not in p.parts and bool(path.strip())
