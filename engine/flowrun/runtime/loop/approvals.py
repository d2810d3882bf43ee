"""Human approval of tool calls, per tool entry: `approve: always` (the default: no question),
`ask` (a human decides each call) or `never` (refused). The decision comes, in this order, from
the log of an earlier attempt (resume and replay never ask again), the entry's `never`, `--yes`
(approve every call), the approver (the terminal's y/n, or the Python API's callback), else it
is a refusal: nobody is there to answer. Every decision is an `approval` event; a refusal is a
NOT_APPROVED tool error the model can work around."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from flowrun.events import ApprovalEvent, Event
from flowrun.runtime.durable.ledger import Ledger
from flowrun.runtime.loop.contracts import AgentInstance, BoundTool
from flowrun.types import ToolCall, ToolResult


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What an approver is asked about: one tool call of one agent."""

    agent: str
    agent_id: str
    tool: str
    call_id: str
    arguments: dict[str, Any] = field(default_factory=dict)


Approver = Callable[[ApprovalRequest], Awaitable[bool]]


class Approvals:
    def __init__(
        self,
        approver: Approver | None,
        approve_all: bool,
        emit: Callable[[Event], None],
        ledger: Ledger | None = None,
    ) -> None:
        self.approver = approver
        self.approve_all = approve_all
        self.emit = emit
        self.ledger = ledger
        self._one_at_a_time: asyncio.Lock | None = None

    async def refusal(self, inst: AgentInstance, bound: BoundTool, call: ToolCall) -> ToolResult | None:
        """None when the call may run; else the NOT_APPROVED result for the model."""
        if bound.approve == "always":
            return None
        approved, by = await self._decide(inst, bound, call)
        self.emit(
            ApprovalEvent(
                agent=inst.name,
                agent_id=inst.id,
                call_id=call.id,
                tool=bound.name,
                approved=approved,
                by=by,
            )
        )
        if approved:
            return None
        return ToolResult.fail("NOT_APPROVED", _why(bound.name, inst.name, by))

    async def _decide(self, inst: AgentInstance, bound: BoundTool, call: ToolCall) -> tuple[bool, str]:
        recorded = self.ledger.approval(inst.id, call.id) if self.ledger else None
        if recorded is not None:
            return recorded, "recorded"
        if bound.approve == "never":
            return False, "policy"
        if self.approve_all:
            return True, "--yes"
        if self.approver is None:
            return False, "no terminal"
        request = ApprovalRequest(inst.name, inst.id, bound.name, call.id, dict(call.arguments))
        if self._one_at_a_time is None:
            self._one_at_a_time = asyncio.Lock()
        async with self._one_at_a_time:  # one question on the terminal at a time
            try:
                approved = bool(await self.approver(request))
            except Exception:  # a broken callback approves nothing
                return False, "callback error"
        return approved, str(getattr(self.approver, "decided_by", "callback"))


def _why(tool: str, agent: str, by: str) -> str:
    if by == "policy":
        return f"{tool} may not be called by {agent}: its entry says `approve: never`"
    if by == "no terminal":
        return (
            f"{tool} needs a human's approval (`approve: ask`) and nobody can answer here: run "
            "flowrun on a terminal, or with --yes to approve every call"
        )
    if by == "callback error":
        return f"the approval callback failed, so this call of {tool} was not approved"
    return f"the user did not approve this call of {tool}; do without it or try another way"
