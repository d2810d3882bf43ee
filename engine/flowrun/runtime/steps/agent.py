"""An agent step: `{agent: NAME, task: ..., workdir: ..., output: ...}` runs a fresh instance of
NAME; with `output`, its final answer is written to that file of the run folder."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from pydantic import Field

from flowrun.atomic_files import replace_beneath
from flowrun.manifest.kinds import Template, YamlPath
from flowrun.manifest.specs import Name, StepSpec
from flowrun.runtime.loop.contracts import Outcome
from flowrun.runtime.steps.base import StepContext, StepKind, confined, top_agent


class AgentStep(StepSpec):
    kind: ClassVar[str] = "agent"
    agent: Name = Field(description="The agent this step runs.")
    task: str | None = Field(
        default=None, description="Jinja2: the first user message (default: the workflow task)."
    )
    workdir: str | None = Field(
        default=None,
        description="Jinja2: working folder under the workspace, "
        "e.g. execution_outputs/iteration_{{ iteration }}.",
    )
    output: str | None = Field(
        default=None,
        description="Jinja2: a file in the run folder the agent's final answer is written to "
        "(its JSON when the agent has an output_schema), e.g. answers/{{ index }}.md.",
    )


PATH_KEYS = ("workdir", "output")  # keys of an agent step that name a place in the run folder


class AgentStepKind(StepKind):
    name = "agent"
    spec = AgentStep

    def agents(self, step: AgentStep) -> Iterator[tuple[str, YamlPath]]:
        yield step.agent, ("agent",)

    def templates(self, step: AgentStep) -> Iterator[Template]:
        if step.task:
            yield Template(step.task, ("task",))
        for key in PATH_KEYS:
            if text := getattr(step, key):
                yield Template(text, (key,), path=True)

    async def run(self, step: AgentStep, index: int, prefix: str, ctx: StepContext) -> Outcome:
        task = ctx.render(step.task, "a step task") if step.task else ctx.default_task()
        workdir = ctx.render(step.workdir, "a step workdir").strip() if step.workdir else None
        output = ctx.render(step.output, "a step output").strip() if step.output else None
        outcome = await top_agent(ctx.run, step.agent, f"{prefix}{step.agent}#{index}", task, workdir)
        if output:
            path = confined(ctx.run, output, "output")
            replace_beneath(ctx.run.workspace, path, outcome.answer())
            outcome.output = path.relative_to(ctx.run.workspace).as_posix()
        return outcome


KIND = AgentStepKind()
