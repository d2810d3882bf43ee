"""A foreach step: `{foreach: {input | file, as, concurrency, collect, step}}` runs its agent
step once per item of a list (an input of type list, or a JSON array / JSON Lines file an
earlier step wrote), `concurrency` at a time. Templates of the step see the item under the
`as` name and its 1-based `index`. The results go to the `collect` file in item order."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

from flowrun.errors import RunError
from flowrun.events import FanoutEndEvent, FanoutStartEvent
from flowrun.manifest.specs import ForeachBody, ForeachStep
from flowrun.runtime.loop.contracts import Outcome
from flowrun.runtime.steps import agent
from flowrun.runtime.steps.base import STEP_VARS, StepContext, confined
from flowrun.runtime.steps.fanout import combined, run_branches, statuses


class ForeachStepKind:
    name = "foreach"

    async def run(self, step: ForeachStep, index: int, prefix: str, ctx: StepContext) -> Outcome:
        body, step_id = step.foreach, f"{prefix}foreach{index}"
        items = foreach_items(ctx, body)
        collect = ctx.render(body.collect, "a foreach collect path").strip()
        target = confined(ctx.run, collect, "collect")

        def branch(k: int, item: Any) -> Callable[[], Awaitable[Outcome | None]]:
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
        write_collected(target, items, outcomes)
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


def read_items(path: Any, relative: str) -> list[Any]:
    hint = "an earlier step must write it: a JSON array, or JSON Lines (one value per line)"
    if not path.is_file():
        raise RunError(f"foreach: {relative} was not found in the run folder", hint)
    text = path.read_text(encoding="utf-8", errors="replace")
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


def _json(text: str, where: str, hint: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise RunError(f"foreach: {where} is not valid JSON ({e.msg} at char {e.pos})", hint) from None


def write_collected(target: Any, items: list[Any], outcomes: list[Outcome | None]) -> None:
    entries = []
    for k, (item, outcome, status) in enumerate(zip(items, outcomes, statuses(outcomes), strict=True), 1):
        entry: dict[str, Any] = {"index": k, "item": item, "status": status}
        if outcome is not None:
            entry |= {"agent_id": outcome.agent_id, "text": outcome.text, "output": outcome.output}
            if outcome.data is not None:
                entry["data"] = outcome.data
        entries.append(entry)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(json.dumps(entries, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, target)


KIND = ForeachStepKind()
