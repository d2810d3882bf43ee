"""A throw-away context strategy: `{strategy: window, turns: N}` restarts an agent's history
from the task when it holds more than N messages after it. Everything the strategy is lives
here: its spec (the schema part), its check and what it does before each model call. It is
registered with one line: `register_context_strategy(STRATEGY)`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.project import Loaded, Project
from flowrun.manifest.specs import AgentManifest, StrategySpec
from flowrun.runtime.loop.contracts import AgentInstance, ContextStrategy, LoopServices


class WindowContext(StrategySpec):
    """Forget all but the task once the history is longer than `turns` messages."""

    strategy: Literal["window"]
    turns: int = Field(ge=1, description="Messages kept after the task before the history restarts.")


class WindowStrategy(ContextStrategy):
    name = "window"
    spec = WindowContext

    def check(self, agent: Loaded[AgentManifest], project: Project) -> list[Diagnostic]:
        if agent.spec.tools:
            return []
        message = "window strategy on an agent without tools: its history never grows"
        return [
            agent.source.diag(("context",), message, "drop `context:`", "idle-window", severity="warning")
        ]

    async def before_call(self, inst: AgentInstance, services: LoopServices) -> None:
        spec = inst.spec.context
        assert isinstance(spec, WindowContext)
        if len(inst.messages) > 1 + spec.turns:
            self.reset(inst, services)


STRATEGY = WindowStrategy()
