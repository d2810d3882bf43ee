"""A parallel step: `{parallel: [agent steps]}` runs its agent steps at the same time; each
branch checks its own `if:` and writes its own `workdir`/`output`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from flowrun.events import FanoutEndEvent, FanoutStartEvent
from flowrun.manifest.specs import AgentStep, ParallelStep
from flowrun.runtime.loop.contracts import Outcome
from flowrun.runtime.steps import agent
from flowrun.runtime.steps.base import StepContext
from flowrun.runtime.steps.fanout import combined, run_branches, statuses


class ParallelStepKind:
    name = "parallel"

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
