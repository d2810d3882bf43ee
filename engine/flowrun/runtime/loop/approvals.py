"""Human approval of tool calls, per tool entry: `approve: always` (the default: no question),
`ask` (a human decides each call) or `never` (refused). The decision comes, in this order, from
the log of an earlier attempt (resume and replay never ask again), the entry's `never`, `--yes`
(approve every call), a decision taken while the run waited for it (`flowrun approve`,
`flowrun.respond`), the approver (the terminal's y/n/later, or the Python API's callback: True,
False, or None for later); else, and when the approver says later, the run waits for the
decision (loop/decisions.py), or under `decisions: refuse` it is a refusal: nobody is there to
answer. Every decision is an `approval` event; a refusal is a NOT_APPROVED tool error the model
can work around."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from flowrun.events import ApprovalEvent, DecisionPendingEvent, Event
from flowrun.runtime.durable.ledger import Ledger
from flowrun.runtime.loop.contracts import AgentInstance, BoundTool
from flowrun.runtime.loop.decisions import Decisions, live_by
from flowrun.types import ToolCall, ToolResult


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What an approver is asked about: one tool call of one agent."""

    agent: str
    agent_id: str
    tool: str
    call_id: str
    arguments: dict[str, Any] = field(default_factory=dict)


# True: run it; False: refuse it; None: nobody decides now (the run waits for the decision)
Approver = Callable[[ApprovalRequest], Awaitable[bool | None]]


@dataclass(frozen=True, slots=True)
class Verdict:
    approved: bool
    by: str
    reason: str | None = None


class Approvals:
    def __init__(
        self,
        approver: Approver | None,
        approve_all: bool,
        emit: Callable[[Event], None],
        ledger: Ledger | None = None,
        decisions: Decisions | None = None,
    ) -> None:
        self.approver = approver
        self.approve_all = approve_all
        self.emit = emit
        self.ledger = ledger
        self.decisions = decisions or Decisions("refuse", None, emit, ledger)
        self._one_at_a_time: asyncio.Lock | None = None

    async def refusal(self, inst: AgentInstance, bound: BoundTool, call: ToolCall) -> ToolResult | None:
        """None when the call may run; else the NOT_APPROVED result for the model."""
        if bound.approve == "always":
            return None
        verdict = await self._decide(inst, bound, call)
        self.emit(
            ApprovalEvent(
                agent=inst.name,
                agent_id=inst.id,
                call_id=call.id,
                tool=bound.name,
                approved=verdict.approved,
                by=verdict.by,
            )
        )
        if verdict.approved:
            return None
        return ToolResult.fail("NOT_APPROVED", _why(bound.name, inst.name, verdict))

    async def _decide(self, inst: AgentInstance, bound: BoundTool, call: ToolCall) -> Verdict:
        recorded = self.ledger.approval(inst.id, call.id) if self.ledger else None
        if recorded is not None:
            return Verdict(recorded, "recorded")
        if bound.approve == "never":
            return Verdict(False, "policy")
        if self.approve_all:
            return Verdict(True, "--yes")
        taken = self.decisions.taken(inst.id, call.id)
        if taken is not None:
            return Verdict(bool(taken.allowed), taken.by, taken.reason)
        if self.approver is not None:
            live = await self._ask(inst, bound, call)
            if live is not None:
                return live
        if not self.decisions.waits:
            return Verdict(False, "no terminal" if self.approver is None else "later")
        request = DecisionPendingEvent(
            kind="approval",
            agent=inst.name,
            agent_id=inst.id,
            call_id=call.id,
            tool=bound.name,
            arguments=dict(call.arguments),
        )
        await self.decisions.wait_for(request)

    async def _ask(self, inst: AgentInstance, bound: BoundTool, call: ToolCall) -> Verdict | None:
        """The approver's decision; None when it says later (or the run already drains)."""
        assert self.approver is not None
        request = ApprovalRequest(inst.name, inst.id, bound.name, call.id, dict(call.arguments))
        if self._one_at_a_time is None:
            self._one_at_a_time = asyncio.Lock()
        drain = self.decisions.drain
        async with self._one_at_a_time:  # one question on the terminal at a time
            if drain.active:  # the run is stopping to wait: this one waits too
                return None
            async with drain.work():  # a person being asked is work in flight
                try:
                    approved = await self.approver(request)
                except Exception:  # a broken callback approves nothing
                    return Verdict(False, "callback error")
        if approved is None:
            return None
        by = str(getattr(self.approver, "decided_by", "callback"))
        allowed = bool(approved)
        self.decisions.taken_live("approval", inst.id, call.id, live_by(self.approver), allowed=allowed)
        return Verdict(allowed, by)


def _why(tool: str, agent: str, verdict: Verdict) -> str:
    by = verdict.by
    if by == "policy":
        return f"{tool} may not be called by {agent}: its entry says `approve: never`"
    if by == "no terminal":
        return (
            f"{tool} needs a human's approval (`approve: ask`) and nobody can answer here: run "
            "flowrun on a terminal, or with --yes to approve every call"
        )
    if by == "later":
        return (
            f"the user put off the approval of this call of {tool}, and this run does not wait for "
            "decisions; go on without it"
        )
    if by == "callback error":
        return f"the approval callback failed, so this call of {tool} was not approved"
    if by == "deadline":
        return f"nobody approved this call of {tool} within the deadline; do without it or try another way"
    why = f". Their reason: {verdict.reason}" if verdict.reason else ""
    return f"the user did not approve this call of {tool}; do without it or try another way{why}"
