"""A parallel step: `{parallel: [agent steps]}` runs its agent steps at the same time; each
branch checks its own `if:` and writes its own `workdir`/`output`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import ClassVar

from pydantic import Field

from flowrun.events import FanoutEndEvent, FanoutStartEvent
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.kinds import Nested, StepAt
from flowrun.manifest.project import Loaded
from flowrun.manifest.specs import StepSpec, WorkflowManifest
from flowrun.runtime.loop.contracts import Outcome
from flowrun.runtime.steps import agent
from flowrun.runtime.steps.agent import AgentStep
from flowrun.runtime.steps.base import StepContext, StepKind
from flowrun.runtime.steps.fanout import combined, run_branches, statuses


class ParallelStep(StepSpec):
    """Agent steps run at the same time, each best with its own `workdir` or `output`."""

    kind: ClassVar[str] = "parallel"
    parallel: list[AgentStep] = Field(min_length=1, description="The agent steps to run at the same time.")


class ParallelStepKind(StepKind):
    name = "parallel"
    spec = ParallelStep

    def children(self, step: ParallelStep) -> Iterator[Nested]:
        for j, branch in enumerate(step.parallel):
            yield Nested(branch, ("parallel", j))

    def check(self, step: ParallelStep, at: StepAt, wf: Loaded[WorkflowManifest]) -> list[Diagnostic]:
        """Two branches with the same `workdir` or `output` would overwrite each other's files."""
        out: list[Diagnostic] = []
        for key in agent.PATH_KEYS:
            seen: dict[str, int] = {}
            for j, branch in enumerate(step.parallel):
                value = getattr(branch, key)
                if not value:
                    continue
                if value.strip() in seen:
                    message = f"parallel branches {seen[value.strip()]} and {j} share the {key} '{value}'"
                    hint = f"give each branch its own {key}"
                    out.append(wf.source.diag((*at.parts, "parallel", j, key), message, hint, "invalid"))
                seen.setdefault(value.strip(), j)
        return out

    async def run(self, step: ParallelStep, index: int, prefix: str, ctx: StepContext) -> Outcome:
        step_id = f"{prefix}parallel{index}"
        branches = step.parallel

        def branch(j: int, spec: AgentStep) -> Callable[[], Awaitable[Outcome | None]]:
            async def go() -> Outcome | None:
                if not ctx.condition_met(spec, f"{step_id}.{j}"):
                    return None
                return await agent.KIND.run(spec, 0, f"{step_id}.{j}/", ctx)

            return go

        ctx.run.emit(
            FanoutStartEvent(step=step_id, kind="parallel", branches=len(branches), concurrency=len(branches))
        )
        outcomes = await run_branches([branch(j, s) for j, s in enumerate(branches)], len(branches))
        ctx.run.emit(FanoutEndEvent(step=step_id, kind="parallel", statuses=statuses(outcomes)))
        return combined("parallel", outcomes)


KIND = ParallelStepKind()
