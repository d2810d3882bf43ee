"""The narrow interfaces parts of a run see of the run: the agent loop and context strategies
see `LoopServices`; tool kinds and step kinds see `RunServices`. `runtime.run.Run` implements
both; tests can drive a loop with anything that does."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from flowrun.events import Event
from flowrun.types import ModelResponse, ToolCall, ToolResult

if TYPE_CHECKING:
    from flowrun.manifest.project import Project
    from flowrun.manifest.specs import Limits, WorkflowManifest
    from flowrun.runtime.loop.instance import AgentInstance
    from flowrun.runtime.loop.sandboxes import SandboxPolicies
    from flowrun.runtime.models.subtrees import SubtreeBook


class LoopServices(Protocol):
    workspace: Path

    def emit(self, event: Event) -> None: ...

    async def model_call(self, inst: AgentInstance) -> ModelResponse: ...

    async def side_call(self, inst: AgentInstance, system: str, text: str, purpose: str) -> str: ...

    async def execute_calls(self, inst: AgentInstance, calls: list[ToolCall]) -> list[ToolResult]: ...


class RunServices(LoopServices, Protocol):
    project: Project
    limits: Limits
    persistent: dict[str, AgentInstance]  # persistent sub-agents by "caller id/name"
    iteration: int | None  # the current loop iteration (1-based), for templates
    spec: WorkflowManifest  # the workflow being run
    sandboxes: SandboxPolicies  # how tool processes are confined (with --sandbox applied)
    subtrees: SubtreeBook  # usage per sub-tree of agents, per-call budgets

    def new_instance(
        self,
        name: str,
        instance_id: str,
        depth: int,
        cwd: Path | None = None,
        model_ref: str | None = None,
    ) -> AgentInstance: ...

    def use_model(self, inst: AgentInstance, ref: str) -> None: ...

    def template_vars(self) -> dict[str, Any]: ...

    def recorded_until(self, loop: str, iteration: int) -> bool | None: ...

    def recorded_condition(self, step: str) -> bool | None: ...

    # a replay compares a decision it made again with the recorded one (a divergence if not)
    def confirm_until(self, loop: str, iteration: int, condition: str, met: bool) -> None: ...

    def confirm_condition(self, step: str, condition: str, met: bool) -> None: ...
