"""What a step kind gets to run one step of a workflow's `steps:`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from flowrun.errors import ManifestError
from flowrun.events import AgentEndEvent, AgentStartEvent
from flowrun.manifest.specs import Step
from flowrun.manifest.templates import render
from flowrun.runtime.agent import run_agent
from flowrun.runtime.instance import Outcome
from flowrun.runtime.services import RunServices

RunSteps = Callable[[list[Step], str], Awaitable[Outcome]]


@dataclass
class StepContext:
    run: RunServices
    run_steps: RunSteps  # runs nested steps (a loop's body) with an id prefix
    default_task: Callable[[], str]

    def render(self, template: str, what: str) -> str:
        return render(template, self.run.template_vars(), what=what)


class StepKind(Protocol):
    name: str

    async def run(self, step: Any, index: int, prefix: str, ctx: StepContext) -> Outcome: ...


async def top_agent(run: RunServices, name: str, instance_id: str, task: str, workdir: str | None) -> Outcome:
    """Run one agent of the workflow itself (not called as a tool), in its working folder."""
    cwd = None
    if workdir:
        cwd = (run.workspace / workdir).resolve()
        if not cwd.is_relative_to(run.workspace):
            raise ManifestError(
                f"workdir '{workdir}' leaves the workspace", "use a relative path without '..'"
            )
        cwd.mkdir(parents=True, exist_ok=True)
    inst = run.new_instance(name, instance_id, depth=0, cwd=cwd)
    run.emit(AgentStartEvent(agent=name, agent_id=inst.id, parent=None, task=task, model=inst.model.name))
    outcome = await run_agent(run, inst, task)
    run.emit(AgentEndEvent(agent=name, agent_id=inst.id, status=outcome.status, steps=outcome.steps))
    return outcome
