"""An agent step: `{agent: NAME, task: ..., workdir: ...}` runs a fresh instance of NAME."""

from __future__ import annotations

from flowrun.manifest.specs import AgentStep
from flowrun.runtime.instance import Outcome
from flowrun.runtime.steps.base import StepContext, top_agent


class AgentStepKind:
    name = "agent"

    async def run(self, step: AgentStep, index: int, prefix: str, ctx: StepContext) -> Outcome:
        task = ctx.render(step.task, "a step task") if step.task else ctx.default_task()
        workdir = ctx.render(step.workdir, "a step workdir").strip() if step.workdir else None
        return await top_agent(ctx.run, step.agent, f"{prefix}{step.agent}#{index}", task, workdir)


KIND = AgentStepKind()
