"""A loop step: `{loop: {steps, until, max_iterations}}` runs its steps again until the `until`
condition holds after an iteration, or `max_iterations` pass."""

from __future__ import annotations

from flowrun.errors import ManifestError
from flowrun.events import IterationEndEvent, IterationStartEvent, UntilErrorEvent
from flowrun.manifest.specs import LoopStep
from flowrun.manifest.templates import evaluate
from flowrun.runtime.loop.contracts import Outcome, RunServices
from flowrun.runtime.steps.base import StepContext


class LoopStepKind:
    name = "loop"

    async def run(self, step: LoopStep, index: int, prefix: str, ctx: StepContext) -> Outcome:
        body, run, loop = step.loop, ctx.run, f"{prefix}loop{index}"
        last = Outcome("completed", "", 0)
        outer = run.iteration
        try:
            for iteration in range(1, body.max_iterations + 1):
                run.iteration = iteration
                run.emit(IterationStartEvent(loop=loop, iteration=iteration))
                last = await ctx.run_steps(body.steps, f"{loop}.{iteration}/")
                recorded = run.recorded_until(loop, iteration)
                done = recorded if recorded is not None else until_met(run, body.until, loop, iteration)
                if recorded is None and body.until:
                    run.confirm_until(loop, iteration, body.until, done)
                run.emit(IterationEndEvent(loop=loop, iteration=iteration, until_met=done))
                if done:
                    break
        finally:
            run.iteration = outer
        return last


def until_met(run: RunServices, condition: str | None, loop: str, iteration: int) -> bool:
    """A condition that cannot be evaluated yet (its file is missing, a key is absent) is not
    met; the reason goes to the event log so a typo does not go unseen."""
    if not condition:
        return False
    try:
        return evaluate(condition, run.template_vars())
    except ManifestError as e:
        run.emit(UntilErrorEvent(loop=loop, iteration=iteration, message=e.message))
        return False


KIND = LoopStepKind()
