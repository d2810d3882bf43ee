"""The user messages an agent gets between its steps: one the log recorded at that point, one
typed at the pause key, or a chat's next turn (or a resumed run's `--message`), each recorded as
a user_message event so a resume or a replay gives it at the same step."""

from __future__ import annotations

from collections.abc import Callable

from flowrun.events import Event, UserMessageEvent
from flowrun.runtime.durable.ledger import Ledger
from flowrun.runtime.loop.contracts import AgentInstance
from flowrun.runtime.options import RunHooks


class UserTurns:
    def __init__(self, hooks: RunHooks, ledger: Ledger | None, emit: Callable[[Event], None]) -> None:
        self.hooks = hooks
        self.ledger = ledger
        self.emit = emit

    async def next(self, inst: AgentInstance, answer: str | None) -> str | None:
        """A user message for `inst` at this point (before a model call, or after an answer that
        would end it): one the log recorded here, else one typed at the pause key, else a chat's
        next turn once the run is past what the log holds (the agent loop asks)."""
        key = (inst.id, inst.model_calls)
        if self.ledger is not None and key in self.ledger.user_messages:
            return self._said(inst, self.ledger.user_messages.pop(key))
        if answer is None and (interjected := await self._interjected(inst)) is not None:
            return self._said(inst, interjected)
        talk = self.hooks.conversation
        if talk is None or inst.depth != 0 or inst.name != talk.agent or (talk.chat and answer is None):
            return None
        if self._logged_ahead(inst):
            return None  # still replaying what the log holds
        text = await talk.read(answer)
        return self._said(inst, text) if text else None

    async def _interjected(self, inst: AgentInstance) -> str | None:
        """The message typed at the pause key, for the agent whose step boundary came first."""
        pause = self.hooks.interject
        if pause is None or not pause.requested():
            return None
        if self._logged_ahead(inst):
            return None  # still going over what the log holds: the pause comes where it goes live
        text = await pause.read(inst.name)
        return text.strip() if text and text.strip() else None

    def _logged_ahead(self, inst: AgentInstance) -> bool:
        """The log holds the agent's next model call: the run has not gone live yet."""
        return self.ledger is not None and (inst.id, inst.model_calls + 1) in self.ledger.responses

    def _said(self, inst: AgentInstance, text: str) -> str:
        self.emit(UserMessageEvent(agent=inst.name, agent_id=inst.id, step=inst.model_calls, text=text))
        return text
