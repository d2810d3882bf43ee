"""What a step kind gets to run one step of a workflow's `steps:`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from flowrun.errors import ManifestError, RunError
from flowrun.events import AgentEndEvent, AgentStartEvent, Event, StepConditionEvent
from flowrun.manifest.kinds import StepKindSide
from flowrun.manifest.specs import StepSpec
from flowrun.manifest.templates import evaluate, render
from flowrun.paths import need_file, need_folder
from flowrun.runtime.durable.ledger import KindRecord, RecordedConditions
from flowrun.runtime.loop.agent import run_agent
from flowrun.runtime.loop.contracts import Outcome, RunServices

RunSteps = Callable[[list[StepSpec], str], Awaitable[Outcome]]
# template names a step adds for the steps inside it (a foreach item and its index); a context
# variable, so the branches of a foreach, running as separate tasks, each see their own item
STEP_VARS: ContextVar[dict[str, Any] | None] = ContextVar("flowrun_step_vars", default=None)


@dataclass
class StepContext:
    run: RunServices
    run_steps: RunSteps  # runs nested steps (a loop's body) with an id prefix
    default_task: Callable[[], str]

    def variables(self) -> dict[str, Any]:
        return {**self.run.template_vars(), **(STEP_VARS.get() or {})}

    def render(self, template: str, what: str) -> str:
        return render(template, self.variables(), what=what)

    def condition_met(self, step: StepSpec, step_id: str) -> bool:
        """A step without `if:` runs; otherwise its condition decides, and the decision is an
        event (a resumed run uses the recorded one; a replay decides again, and a different
        decision is a divergence). A condition that cannot be evaluated is not met, and says why."""
        condition = step.if_
        if not condition:
            return True
        decided = self.run.recorded(StepConditions)
        recorded = decided.kept(step_id)
        message = None
        if recorded is not None:
            met = recorded
        else:
            try:
                met = evaluate(condition, self.variables(), what="if")
            except ManifestError as e:
                met, message = False, e.message
            decided.confirm(step_id, f"{step_id} if", condition, met)
        self.run.emit(StepConditionEvent(step=step_id, condition=condition, met=met, message=message))
        return met


class StepConditions(RecordedConditions):
    """Each step's `if:` decision in the recording, by step id (every step kind takes `if:`)."""

    reads = (StepConditionEvent,)

    def add(self, event: Event) -> None:
        if isinstance(event, StepConditionEvent):
            self.met[event.step] = event.met


class StepKind(StepKindSide, Protocol):
    """A step kind: its manifest side (manifest/kinds.py) and how it runs."""

    # what it keeps of a recorded run for resume and replay (durable/ledger.KindRecord)
    records: ClassVar[tuple[type[KindRecord], ...]] = ()

    async def run(self, step: Any, index: int, prefix: str, ctx: StepContext) -> Outcome: ...


def confined(run: RunServices, relative: str, what: str, folder: bool = False) -> Path:
    """A path of the run folder a step names (a workdir, an output, a collect file); a path
    that exists with the wrong type (`folder`: a folder is needed, else a file) is a UsageError
    naming it."""
    given = run.workspace / relative
    # a file's own name is not followed: a symlink there is replaced by the file, not written through
    keep_name = not folder and given.name not in ("", ".", "..")
    path = given.parent.resolve() / given.name if keep_name else given.resolve()
    if not relative.strip() or not path.is_relative_to(run.workspace):
        if ".." in Path(relative).parts or Path(relative).is_absolute():
            raise ManifestError(
                f"{what} '{relative}' leaves the workspace", "use a relative path without '..'"
            )
        raise RunError(
            f"{what} '{relative}' leads out of the workspace through a symlink",
            "a tool replaced a folder on its way with a symlink; nothing was written there",
        )
    check = need_folder if folder else need_file
    check(run.workspace, path, f"{what} {relative}")
    return path


async def top_agent(run: RunServices, name: str, instance_id: str, task: str, workdir: str | None) -> Outcome:
    """Run one agent of the workflow itself (not called as a tool), in its working folder."""
    cwd = None
    if workdir:
        cwd = confined(run, workdir, "workdir", folder=True)
        cwd.mkdir(parents=True, exist_ok=True)
    inst = run.new_instance(name, instance_id, depth=0, cwd=cwd)
    inst.tree = run.subtrees.open(name, inst.id)
    run.emit(AgentStartEvent(agent=name, agent_id=inst.id, parent=None, task=task, model=inst.model.name))
    outcome = await run_agent(run, inst, task)
    outcome.agent_id = inst.id
    run.emit(AgentEndEvent(agent=name, agent_id=inst.id, status=outcome.status, steps=outcome.steps))
    if outcome.status == "repeated_call":  # the loop guard stopped an agent of the workflow itself
        raise RunError(
            outcome.text,
            "look at the agent's calls (`flowrun show RUN --messages`); raise "
            "`max_repeated_calls` only if the repetition is intended",
        )
    return outcome
