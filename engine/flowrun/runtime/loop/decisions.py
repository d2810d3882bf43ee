"""Decisions only a person can take, inside a run: an `approve: ask` call, an `ask_user`
question, more budget under `on_budget: ask`. Each is taken, in this order, from the log (a
`decision` an earlier attempt waited for; resume and replay never ask again), by someone live
(the terminal, the API's callback), else the run waits for it.

Waiting is a drain, not a stop: the request becomes a `decision_pending` event and is parked;
from then on no new model call or tool call starts (each parks at its gate), while those in
flight finish and are logged, so a resume never sends a model request twice. A request that
becomes pending meanwhile (a parallel branch) is parked too. When nothing is in flight, every
parked call raises RunWaiting, and the run ends `waiting` with the open requests in run.json.
Under `decisions: refuse` nothing waits: calls are refused, questions unanswered, a budget stops
the run, as when nobody could answer before waiting existed."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import NoReturn

from flowrun.errors import BudgetExceeded
from flowrun.events import DecisionEvent, DecisionPendingEvent, Event
from flowrun.runtime.durable.decisions import DEADLINE_ANSWER, Key, PendingDecision, key_of, same_request
from flowrun.runtime.durable.ledger import Ledger
from flowrun.runtime.models.budgets import Budgets

# a person's answer to a question, or None: nobody answers now (the run waits)
LiveAnswer = Callable[[str], Awaitable[str | None] | str | None]


class RunWaiting(Exception):  # not an error: the run stops to wait
    """Raised in every parked call once nothing is in flight any more: the run ends `waiting`."""


class Drain:
    """Counts the work in flight (live model calls, running tools, a person being asked) and,
    once a decision is pending (`begin`), lets no new work start: each parks until nothing is
    in flight, then raises RunWaiting."""

    def __init__(self) -> None:
        self.active = False  # a decision is pending: no new work starts
        self.in_flight = 0
        self._stop = asyncio.Event()

    def begin(self) -> None:
        self.active = True
        self._settle()

    async def admit(self) -> None:
        """Before new work that is not counted (a model call still to be checked): parked once
        the drain began."""
        if self.active:
            await self.park()

    @asynccontextmanager
    async def work(self, counted: bool = True) -> AsyncIterator[None]:
        """Start a piece of work (parked instead once the drain began); `counted`: it is in
        flight until the block ends (a delegating call is not: its own calls are)."""
        await self.admit()
        if counted:
            self.in_flight += 1
        try:
            yield
        finally:
            if counted:
                self.in_flight -= 1
                self._settle()

    async def park(self, inside_work: bool = False) -> NoReturn:
        """Wait until nothing is in flight, then raise RunWaiting. `inside_work`: called from
        counted work (a tool asking a question), which does not count while it is parked."""
        if inside_work:
            self.in_flight -= 1
            self._settle()
        try:
            await self._stop.wait()
        finally:
            if inside_work:
                self.in_flight += 1
        raise RunWaiting()

    def _settle(self) -> None:
        if self.active and self.in_flight <= 0:
            self._stop.set()


class Decisions:
    """A run's decisions: the ledger's, those taken live, those it waits for (`open`)."""

    def __init__(
        self,
        mode: str,
        deadline_s: float | None,
        emit: Callable[[Event], None],
        ledger: Ledger | None = None,
        on_budget: str = "stop",
        attempt: int = 0,
    ) -> None:
        self.mode = mode  # wait | refuse (RunOptions.decisions)
        self.attempt = attempt  # the run's resume count: part of the name of what it asks now
        self.deadline_s = deadline_s
        self.emit = emit
        self.ledger = ledger
        self.on_budget = on_budget
        self.drain = Drain()
        # told of each request that starts to wait (the Notification hooks)
        self.on_pending: Callable[[DecisionPendingEvent], Awaitable[None]] | None = None
        self._budget_asks: Counter[str] = Counter()
        recorded = ledger.waiting.values() if ledger is not None and ledger.mode == "resume" else ()
        # what the run waits for: the log's open requests, and those that become pending now
        self.open: dict[Key, PendingDecision] = {key_of(e): PendingDecision.from_event(e) for e in recorded}
        self.reached: set[Key] = set()  # asked in this attempt (the log's, again, or new)

    @property
    def waits(self) -> bool:
        return self.mode == "wait"

    def taken(self, agent_id: str, call_id: str) -> DecisionEvent | None:
        return self.ledger.decision(agent_id, call_id) if self.ledger is not None else None

    async def wait_for(self, request: DecisionPendingEvent, inside_work: bool = False) -> NoReturn:
        """Record the request (once: a resumed run that reaches it again keeps the first
        record, its attempt and its deadline), then park until the run stops to wait."""
        key = key_of(request)
        earlier = self.ledger.waiting.get(key) if self.ledger is not None else None
        if earlier is not None and not same_request(earlier, request):
            earlier = None  # asked anew in its place: a request of this attempt
        if earlier is not None:
            request.deadline, request.attempt = earlier.deadline, earlier.attempt
        else:
            request.attempt = self.attempt
            if self.deadline_s is not None:
                request.deadline = round(time.time() + self.deadline_s, 3)
        self.emit(request)
        self.open[key] = PendingDecision.from_event(earlier or request)
        self.reached.add(key)
        if self.on_pending is not None:
            await self.on_pending(request)
        self.drain.begin()
        await self.drain.park(inside_work)

    def taken_live(
        self,
        kind: str,
        agent_id: str,
        call_id: str,
        by: str,
        allowed: bool | None = None,
        answer: str | None = None,
    ) -> None:
        """Someone live took a request the log had open: its `decision` event, so the log
        says it is no longer pending."""
        pending = self.open.pop((agent_id, call_id), None)
        if pending is None:
            return
        agent = pending.agent
        decision = DecisionEvent(
            kind=kind,
            agent_id=agent_id,
            call_id=call_id,
            agent=agent,
            allowed=allowed,
            answer=answer,
            by=by,
            attempt=pending.attempt,
            amount=pending.amount,
        )
        self.emit(decision)

    def open_requests(self) -> list[PendingDecision]:
        """What the run waits for: the requests asked in this attempt, and those an earlier one
        left open unless the agent that asked them went another way in this one (a resume
        after its prompt or tools changed: it will not ask them again)."""
        kept = [p for key, p in self.open.items() if key in self.reached or not self._gone_another_way(p)]
        return sorted(kept, key=lambda p: p.since)

    def _gone_another_way(self, request: PendingDecision) -> bool:
        diverged = self.ledger.diverged if self.ledger is not None else set()
        return any(request.agent_id == d or request.agent_id.startswith(d + "/") for d in diverged)

    # ------------------------------------------------------------ questions

    async def answer(
        self, agent: str, agent_id: str, call_id: str, question: str, live: LiveAnswer | None
    ) -> str:
        """The answer to an ask_user question (from a tool call in flight): recorded, live, or
        waited for. TimeoutError when the deadline took it; EOFError when a live person put it
        off and the run does not wait."""
        taken = self.taken(agent_id, call_id)
        if taken is not None:
            if taken.answer is None:
                raise TimeoutError(DEADLINE_ANSWER)
            return taken.answer
        if live is not None and not self.drain.active:
            given = live(question)
            answer = await given if inspect.isawaitable(given) else given
            if answer is not None:
                self.taken_live("question", agent_id, call_id, live_by(live), answer=str(answer))
                return str(answer)
        if not self.waits:
            raise EOFError("the question was put off, and this run does not wait for answers")
        request = DecisionPendingEvent(
            kind="question", agent=agent, agent_id=agent_id, call_id=call_id, question=question
        )
        await self.wait_for(request, inside_work=True)

    # ------------------------------------------------------------ budgets

    async def admit_model_call(self, budgets: Budgets, agent: str) -> None:
        """Before a model call: parked while the run drains; then the run's budgets, where a
        limit reached under `on_budget: ask` is a decision (a grant raises it)."""
        await self.drain.admit()
        while True:
            try:
                budgets.check()
                return
            except BudgetExceeded as reached:
                if self.on_budget != "ask" or not self.waits:
                    raise
                await self._budget_decision(budgets, agent, reached)

    async def _budget_decision(self, budgets: Budgets, agent: str, reached: BudgetExceeded) -> None:
        self._budget_asks[reached.limit] += 1
        call_id = f"budget-{reached.limit}-{self._budget_asks[reached.limit]}"
        amount = budgets.value(reached.limit)
        taken = self.taken("", call_id)
        if taken is not None and None not in (taken.amount, amount) and taken.amount != amount:
            taken = None  # taken when the limit was another: this is a request of its own
        if taken is None:
            request = DecisionPendingEvent(
                kind="budget",
                agent=agent,
                agent_id="",
                call_id=call_id,
                limit=reached.limit,
                amount=amount,
                message=reached.message,
            )
            await self.wait_for(request)
        if not taken.allowed:
            why = f" ({taken.reason})" if taken.reason else ""
            raise BudgetExceeded(f"{reached.message}; more was refused by {taken.by}{why}", reached.limit)
        budgets.grant(reached.limit, taken.grant or budgets.value(reached.limit) or 0.0)


def live_by(hook: object) -> str:
    """How a live hook decides, for a `decision` event: the terminal's say "terminal"."""
    said = str(getattr(hook, "decided_by", "callback"))
    return "terminal" if said == "user" else said
