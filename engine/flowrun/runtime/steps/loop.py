"""A loop step: `{loop: {steps, until, max_iterations}}` runs its steps again until the `until`
condition holds after an iteration, or `max_iterations` pass."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import ClassVar

from pydantic import Field

from flowrun.errors import ManifestError
from flowrun.events import Event, IterationEndEvent, IterationStartEvent, UntilErrorEvent
from flowrun.manifest.kinds import Nested, Template
from flowrun.manifest.specs import Step, StepSpec, Strict
from flowrun.manifest.templates import evaluate
from flowrun.runtime.durable.ledger import RecordedConditions
from flowrun.runtime.loop.contracts import Outcome, RunServices
from flowrun.runtime.steps.base import StepContext, StepKind


class LoopBody(Strict):
    steps: list[Step] = Field(min_length=1)
    until: str | None = Field(
        default=None,
        description="Jinja2 expression checked after each iteration, e.g. "
        "\"workspace.json('eval.json').success_rate >= 0.9\"; workspace.read/json/exists read files.",
    )
    max_iterations: int = Field(ge=1, le=1000)


class LoopStep(StepSpec):
    kind: ClassVar[str] = "loop"
    loop: LoopBody


class Iterations(RecordedConditions):
    """Each loop iteration's `until` decision in the recording, by (loop, iteration)."""

    reads = (IterationEndEvent,)

    def add(self, event: Event) -> None:
        if isinstance(event, IterationEndEvent):
            self.met[(event.loop, event.iteration)] = event.until_met


class LoopStepKind(StepKind):
    name = "loop"
    spec = LoopStep
    records = (Iterations,)

    def children(self, step: LoopStep) -> Iterator[Nested]:
        for i, nested in enumerate(step.loop.steps):
            yield Nested(nested, ("loop", "steps", i))

    def repeats(self, step: StepSpec, inputs: Mapping[str, object]) -> float:
        assert isinstance(step, LoopStep)
        return float(step.loop.max_iterations)

    def templates(self, step: LoopStep) -> Iterator[Template]:
        if step.loop.until:
            yield Template(step.loop.until, ("loop", "until"), expression=True)

    async def run(self, step: LoopStep, index: int, prefix: str, ctx: StepContext) -> Outcome:
        body, run, loop = step.loop, ctx.run, f"{prefix}loop{index}"
        last = Outcome("completed", "", 0)
        outer, decided = run.iteration, run.recorded(Iterations)
        try:
            for iteration in range(1, body.max_iterations + 1):
                run.iteration = iteration
                run.emit(IterationStartEvent(loop=loop, iteration=iteration))
                last = await ctx.run_steps(body.steps, f"{loop}.{iteration}/")
                recorded = decided.kept((loop, iteration))
                done = recorded if recorded is not None else until_met(run, body.until, loop, iteration)
                if recorded is None and body.until:
                    where = f"{loop} iteration {iteration} until"
                    decided.confirm((loop, iteration), where, body.until, done)
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
