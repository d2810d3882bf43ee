"""What a context strategy does to an agent's conversation, and the default behaviour that
every strategy starts from: the opening message is the task, nothing happens before a model
call, and a reset restarts the history from the opening message."""

from __future__ import annotations

from flowrun.events import ContextResetEvent
from flowrun.runtime.loop.contracts import AgentInstance, LoopServices
from flowrun.types import Message


class ContextStrategy:
    name = "full"

    def opening(self, inst: AgentInstance, task: str, services: LoopServices) -> str:
        """The first user turn of a conversation (and of a reset one)."""
        return task

    async def before_call(self, inst: AgentInstance, services: LoopServices) -> None:
        """A chance to shrink the history before each model call."""

    def reset(self, inst: AgentInstance, services: LoopServices) -> None:
        """Restart the history from the opening message (a tool asked for it)."""
        before = len(inst.messages)
        inst.messages = [Message("user", self.opening(inst, inst.task, services))]
        services.emit(
            ContextResetEvent(agent=inst.name, agent_id=inst.id, messages_before=before, messages_after=1)
        )
