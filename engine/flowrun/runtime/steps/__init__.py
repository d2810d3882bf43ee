"""Step kinds, by the tag of their spec (`AgentStep.kind`, `LoopStep.kind`, ...). A new kind is
one module with a `KIND` implementing `base.StepKind`, one line here, and its spec in the `Step`
union of manifest/specs.py."""

from __future__ import annotations

from flowrun.manifest.specs import Step
from flowrun.runtime.loop.contracts import Outcome
from flowrun.runtime.steps import agent, foreach, loop, parallel
from flowrun.runtime.steps.base import StepContext, StepKind

STEP_KINDS: dict[str, StepKind] = {
    "agent": agent.KIND,
    "loop": loop.KIND,
    "parallel": parallel.KIND,
    "foreach": foreach.KIND,
}


async def run_steps(steps: list[Step], prefix: str, ctx: StepContext) -> Outcome:
    """Run steps in order, each unless its `if:` is not met; the outcome is the last run step's."""
    last = Outcome("completed", "", 0)
    for index, step in enumerate(steps):
        if ctx.condition_met(step, f"{prefix}step{index}"):
            last = await STEP_KINDS[step.kind].run(step, index, prefix, ctx)
    return last
