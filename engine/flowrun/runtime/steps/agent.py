"""An agent step: `{agent: NAME, task: ..., workdir: ..., output: ...}` runs a fresh instance of
NAME; with `output`, its final answer is written to that file of the run folder."""

from __future__ import annotations

from flowrun.manifest.specs import AgentStep
from flowrun.runtime.loop.contracts import Outcome
from flowrun.runtime.steps.base import StepContext, confined, top_agent


class AgentStepKind:
    name = "agent"

    async def run(self, step: AgentStep, index: int, prefix: str, ctx: StepContext) -> Outcome:
        task = ctx.render(step.task, "a step task") if step.task else ctx.default_task()
        workdir = ctx.render(step.workdir, "a step workdir").strip() if step.workdir else None
        output = ctx.render(step.output, "a step output").strip() if step.output else None
        outcome = await top_agent(ctx.run, step.agent, f"{prefix}{step.agent}#{index}", task, workdir)
        if output:
            path = confined(ctx.run, output, "output")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(outcome.answer(), encoding="utf-8")
            outcome.output = path.relative_to(ctx.run.workspace).as_posix()
        return outcome


KIND = AgentStepKind()
