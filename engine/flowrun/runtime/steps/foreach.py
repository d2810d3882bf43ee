"""A foreach step: `{foreach: {input | file, as, concurrency, collect, step}}` runs its agent
step once per item of a list (an input of type list, or a JSON array / JSON Lines file an
earlier step wrote), `concurrency` at a time. Templates of the step see the item under the
`as` name and its 1-based `index`. The results go to the `collect` file in item order."""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from flowrun.atomic_files import replace_beneath
from flowrun.errors import RunError
from flowrun.events import FanoutEndEvent, FanoutStartEvent
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.kinds import Nested, StepAt, Template, YamlPath
from flowrun.manifest.project import Loaded
from flowrun.manifest.schema.check import did_you_mean
from flowrun.manifest.schema.salvage import among, unreadable
from flowrun.manifest.specs import Name, StepSpec, Strict, WorkflowManifest
from flowrun.manifest.templates import WORKFLOW_BUILTINS, analyse
from flowrun.pinned import TooLarge, read_checked
from flowrun.runtime.loop.contracts import Outcome
from flowrun.runtime.steps import agent
from flowrun.runtime.steps.agent import AgentStep
from flowrun.runtime.steps.base import STEP_VARS, StepContext, StepKind, confined
from flowrun.runtime.steps.fanout import combined, run_branches, statuses
from flowrun.types import decode_json

MAX_ITEMS_BYTES = 50_000_000  # a foreach list file an agent wrote


class ForeachBody(Strict):
    input: Name | None = Field(
        default=None, description="An input of type list whose items the step runs over."
    )
    file: str | None = Field(
        default=None,
        description="Jinja2: a file in the run folder written by an earlier step: a JSON array, or "
        "JSON Lines (one value per line) when it ends in .jsonl.",
    )
    as_: Name = Field(
        default="item",
        alias="as",
        description="The name templates of the step use for the item (and `index`).",
    )
    concurrency: int = Field(default=4, ge=1, le=64, description="Items run at the same time.")
    collect: str = Field(
        description="Jinja2: the JSON file the results are collected into, one entry per item in "
        "item order ({index, item, agent_id, status, text, output, data}), for the next step to read."
    )
    step: AgentStep = Field(description="The agent step run once per item.")


class ForeachStep(StepSpec):
    """One agent step per item of a list, `concurrency` at a time."""

    kind: ClassVar[str] = "foreach"
    foreach: ForeachBody


class ForeachStepKind(StepKind):
    name = "foreach"
    spec = ForeachStep

    def children(self, step: ForeachStep) -> Iterator[Nested]:
        body = step.foreach
        yield Nested(body.step, ("foreach", "step"), frozenset({body.as_, "index"}))

    def repeats(self, step: StepSpec, inputs: Mapping[str, object]) -> float:
        assert isinstance(step, ForeachStep)
        items = inputs.get(step.foreach.input) if step.foreach.input else None
        return float(len(items)) if isinstance(items, list) else math.inf  # else only the run knows

    def templates(self, step: ForeachStep) -> Iterator[Template]:
        for key in ("file", "collect"):
            if text := getattr(step.foreach, key):
                yield Template(text, ("foreach", key), path=True)

    def check(self, step: ForeachStep, at: StepAt, wf: Loaded[WorkflowManifest]) -> list[Diagnostic]:
        where = (*at.parts, "foreach")
        return _item_name(wf, step, where) + _shared_paths(wf, step, where) + _list_source(wf, step, where)

    async def run(self, step: ForeachStep, index: int, prefix: str, ctx: StepContext) -> Outcome:
        body, step_id = step.foreach, f"{prefix}foreach{index}"
        items = foreach_items(ctx, body)
        collect = ctx.render(body.collect, "a foreach collect path").strip()
        target = confined(ctx.run, collect, "collect")

        def branch(k: int, item: object) -> Callable[[], Awaitable[Outcome | None]]:
            async def go() -> Outcome | None:
                # set inside the branch's own task: the other branches never see this item
                STEP_VARS.set({**(STEP_VARS.get() or {}), body.as_: item, "index": k})
                if not ctx.condition_met(body.step, f"{step_id}.{k}"):
                    return None
                return await agent.KIND.run(body.step, 0, f"{step_id}.{k}/", ctx)

            return go

        ctx.run.emit(
            FanoutStartEvent(
                step=step_id,
                kind="foreach",
                branches=len(items),
                concurrency=body.concurrency,
                collect=collect,
            )
        )
        branches = [branch(k, item) for k, item in enumerate(items, start=1)]
        outcomes = await run_branches(branches, body.concurrency)
        write_collected(ctx.run.workspace, target, items, outcomes)
        ctx.run.emit(
            FanoutEndEvent(step=step_id, kind="foreach", statuses=statuses(outcomes), collect=collect)
        )
        return combined("foreach", outcomes)


def foreach_items(ctx: StepContext, body: ForeachBody) -> list[Any]:
    """The list a foreach runs over; a clear error when it is not one."""
    if body.input is not None:
        value = ctx.variables()["inputs"].get(body.input)
        if value is None:
            return []
        if not isinstance(value, list):
            raise RunError(f"foreach: input '{body.input}' is not a list", "declare it with `type: list`")
        return value
    assert body.file is not None  # validation: exactly one of input and file
    relative = ctx.render(body.file, "a foreach file").strip()
    return read_items(confined(ctx.run, relative, "foreach file"), relative)


def read_items(path: Path, relative: str) -> list[object]:
    hint = "an earlier step must write it: a JSON array, or JSON Lines (one value per line)"
    if not path.is_file():
        raise RunError(f"foreach: {relative} was not found in the run folder", hint)
    try:  # (an agent's file: read as checked, never a FIFO, at most MAX_ITEMS_BYTES)
        text = read_checked(path, MAX_ITEMS_BYTES).decode("utf-8", errors="replace")
    except TooLarge:
        raise RunError(
            f"foreach: {relative} is over {MAX_ITEMS_BYTES // 1_000_000} MB, more than a foreach list may be",
            "split the work, or have the step write a shorter list",
        ) from None
    except OSError as e:
        raise RunError(f"foreach: cannot read {relative}: {e.strerror or e}", hint) from None
    if relative.endswith(".jsonl"):
        items = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                items.append(_json(line, f"{relative} line {number}", hint))
        return items
    value = _json(text, relative, hint)
    if not isinstance(value, list):
        raise RunError(f"foreach: {relative} holds a JSON {type(value).__name__}, not an array", hint)
    return value


def _json(text: str, where: str, hint: str) -> object:
    try:
        return decode_json(text)
    except json.JSONDecodeError as e:
        raise RunError(f"foreach: {where} is not valid JSON ({e.msg} at char {e.pos})", hint) from None


def write_collected(root: Path, target: Path, items: list[Any], outcomes: list[Outcome | None]) -> None:
    entries = []
    for k, (item, outcome, status) in enumerate(zip(items, outcomes, statuses(outcomes), strict=True), 1):
        entry: dict[str, object] = {"index": k, "item": item, "status": status}
        if outcome is not None:
            entry |= {"agent_id": outcome.agent_id, "text": outcome.text, "output": outcome.output}
            if outcome.data is not None:
                entry["data"] = outcome.data
        entries.append(entry)
    replace_beneath(root, target, json.dumps(entries, indent=2, ensure_ascii=False, default=str) + "\n")


# ---------------------------------------------------------------- checks


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
    for key in agent.PATH_KEYS:
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
    if (body.input is None) == (body.file is None) and not src.lost(where, "input", "file"):
        hint = "name an input of type list (`input:`) or a JSON/JSONL file an earlier step writes (`file:`)"
        return [src.diag(where, "a foreach needs exactly one of `input` or `file`", hint, "invalid")]
    if body.input is None:
        return []
    declared = wf.spec.inputs.get(body.input)
    if declared is None and among(body.input, unreadable(src, "inputs")):
        return []  # declared, but its schema error makes it unreadable
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


KIND = ForeachStepKind()
