"""Decisions only a person can take, as the event log records them: a `decision_pending` event
when a run waits for one (an approval, a question, more budget), a `decision` event when it is
taken. A request is named by its agent instance, its call id and the attempt (the run's resume
count) that first asked it: its `ref`, AGENT_ID/CALL_ID#ATTEMPT. It is open while the log has
its `decision_pending` and no `decision`, and no later attempt asked another request in its
place or ended without it (`DecisionHistory`); this module reads them back (`open_decisions`),
makes the `decision` for an answer (`decided`) or for a deadline that passed (`overdue`), and
says how to take one (`how_to_decide`)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from flowrun.errors import UsageError
from flowrun.events import DecisionEvent, DecisionPendingEvent, Event, RunEndEvent, RunResumedEvent

Kind = Literal["approval", "question", "budget"]
KINDS: tuple[Kind, ...] = ("approval", "question", "budget")
DEADLINE_ANSWER = "nobody answered within the deadline"


@dataclass(frozen=True, slots=True)
class PendingDecision:
    """One open request of a waiting run (run.json's `pending` holds them as `to_dict()`)."""

    kind: Kind
    call_id: str  # the tool call's id; a budget's "budget-LIMIT-N"
    agent: str  # the agent's name
    agent_id: str  # the instance path ("" for a budget: it is the run's)
    tool: str | None = None  # approval
    arguments: dict[str, Any] = field(default_factory=dict)  # approval
    question: str | None = None  # question
    limit: str | None = None  # budget: max_cost_usd, max_total_tokens, max_total_steps, max_wall_time_s
    amount: float | None = None  # budget: the limit's value (the default grant: as much again)
    message: str | None = None  # budget: what was reached
    since: float = 0.0  # when it became pending (epoch seconds)
    deadline: float | None = None  # when "deadline" takes it (epoch seconds)
    attempt: int | None = None  # the run's resume count when it was first asked (None: an older log)

    @property
    def where(self) -> str:
        """AGENT_ID/CALL_ID (a budget's: its call id): where in the run it is asked. Tool call
        ids may repeat across agent instances (two branches running the same script), these not."""
        return f"{self.agent_id}/{self.call_id}" if self.agent_id else self.call_id

    @property
    def ref(self) -> str:
        """Unique within a run: `where` and the attempt that asked it, AGENT_ID/CALL_ID#ATTEMPT
        (a budget asked again after a resume has the same call id, another attempt)."""
        return with_attempt(self.where, self.attempt)

    def matches(self, handle: str) -> bool:
        return handle in (self.call_id, self.where, self.ref)

    def overdue(self, now: float | None = None) -> bool:
        return self.deadline is not None and (time.time() if now is None else now) >= self.deadline

    def describe(self) -> str:
        """One line for people: what is asked, of whom."""
        if self.kind == "approval":
            shown = ", ".join(f"{k}={v!r}" for k, v in self.arguments.items())
            shown = shown if len(shown) <= 200 else shown[:200] + "…"
            what = f"approve {self.tool}({shown}) for {self.agent_id or self.agent}"
        elif self.kind == "question":
            what = f"answer {self.agent_id or self.agent}'s question: {_short(self.question or '', 200)}"
        else:
            what = f"grant more budget: {self.message or self.limit}"
        if self.deadline is not None:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.deadline))
            what += f" (decide by {when})"
        return what

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind, "call_id": self.call_id, "ref": self.ref}
        out |= {"agent": self.agent, "agent_id": self.agent_id}
        for name in ("attempt", "tool", "question", "limit", "amount", "message", "deadline"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.kind == "approval":
            out["arguments"] = dict(self.arguments)
        out["since"] = self.since
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> PendingDecision:
        kind = raw.get("kind")
        return cls(
            kind=kind if kind in KINDS else "approval",
            call_id=str(raw.get("call_id") or ""),
            agent=str(raw.get("agent") or ""),
            agent_id=str(raw.get("agent_id") or ""),
            tool=raw.get("tool"),
            arguments=dict(raw.get("arguments") or {}),
            question=raw.get("question"),
            limit=raw.get("limit"),
            amount=raw.get("amount"),
            message=raw.get("message"),
            since=float(raw.get("since") or 0.0),
            deadline=raw.get("deadline"),
            attempt=_attempt(raw.get("attempt")),
        )

    @classmethod
    def from_event(cls, event: DecisionPendingEvent) -> PendingDecision:
        kind = event.kind if event.kind in KINDS else "approval"
        return cls(
            kind=kind,
            call_id=event.call_id,
            agent=event.agent,
            agent_id=event.agent_id,
            tool=event.tool,
            arguments=dict(event.arguments or {}),
            question=event.question,
            limit=event.limit,
            amount=event.amount,
            message=event.message,
            since=event.t,
            deadline=event.deadline,
            attempt=event.attempt,
        )


@dataclass(frozen=True, slots=True)
class Decision:
    """A decision taken, as its `decision` event records it."""

    kind: Kind
    call_id: str
    agent_id: str
    allowed: bool | None = None  # approval, budget
    answer: str | None = None  # question (None when the deadline took it)
    grant: float | None = None  # budget: how much more of `limit`
    limit: str | None = None
    reason: str | None = None
    by: str = ""  # cli | python | http | ui | terminal | callback | deadline
    user: str | None = None
    at: float = 0.0  # epoch seconds
    attempt: int | None = None  # its request's
    amount: float | None = None  # budget: the limit's value when it was reached

    @property
    def where(self) -> str:
        return f"{self.agent_id}/{self.call_id}" if self.agent_id else self.call_id

    @property
    def ref(self) -> str:
        return with_attempt(self.where, self.attempt)

    def matches(self, handle: str) -> bool:
        return handle in (self.call_id, self.where, self.ref)

    def describe(self) -> str:
        return f"{self.ref}: {self.outcome()}"

    def outcome(self) -> str:
        """What was decided, and by whom: `denied by cli (ana)`."""
        return f"{self.verdict()} by {self.by}" + (f" ({self.user})" if self.user else "")

    def verdict(self) -> str:
        """What was decided, in words (the web UI shows them beside who, when and why)."""
        if self.kind == "question":
            return "left unanswered" if self.answer is None else f"answered {_short(self.answer, 60)!r}"
        if self.kind == "budget":
            if not self.allowed:
                return "refused more budget"
            if self.grant is None:
                return "granted more budget"
            return f"granted {self.grant:g} more {self.limit}"
        return "allowed" if self.allowed else "denied"

    @classmethod
    def from_event(cls, event: DecisionEvent) -> Decision:
        kind = event.kind if event.kind in KINDS else "approval"
        return cls(
            kind=kind,
            call_id=event.call_id,
            agent_id=event.agent_id,
            allowed=event.allowed,
            answer=event.answer,
            grant=event.grant,
            limit=event.limit,
            reason=event.reason,
            by=event.by,
            user=event.user,
            at=event.t,
            attempt=event.attempt,
            amount=event.amount,
        )


Key = tuple[str, str]  # (agent id, call id): where a request is asked


def key_of(event: DecisionPendingEvent | DecisionEvent | PendingDecision) -> Key:
    return (event.agent_id, event.call_id)


def with_attempt(where: str, attempt: int | None) -> str:
    return where if attempt is None else f"{where}#{attempt}"


def _attempt(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def one_attempt(a: int | None, b: int | None) -> bool:
    """Whether two attempts are the same one (a log of an earlier version records none)."""
    return a == b or a is None or b is None


Asked = DecisionPendingEvent | PendingDecision


def same_request(a: Asked, b: Asked) -> bool:
    """Whether `b`, asked where `a` was, is `a` asked again (a resume reaching it anew) rather
    than a request of its own: the same call with the same arguments, the same question, a
    budget reached at the same value of its limit. A resume that went another way (a prompt
    changed: the model asked live made another call under the same id), or reached a budget
    the workflow has changed since, asks anew."""
    if a.kind != b.kind:
        return False
    if a.kind == "budget":
        return a.amount is None or b.amount is None or a.amount == b.amount
    if a.kind == "question":
        return a.question == b.question
    return a.tool == b.tool and dict(a.arguments or {}) == dict(b.arguments or {})


class DecisionHistory:
    """A log's decisions, fed one event at a time: the requests open now (`open`), those taken
    (`taken`), and those an attempt left behind (`passed`: another request was asked in the
    same place, or the attempt ended without it), and the run's resume count (`attempt`)."""

    def __init__(self) -> None:
        self.open: dict[Key, PendingDecision] = {}
        self.taken: list[Decision] = []
        self.passed: list[PendingDecision] = []
        self.attempt = 0

    @classmethod
    def of(cls, events: Iterable[Event]) -> DecisionHistory:
        history = cls()
        for event in events:
            history.feed(event)
        return history

    def feed(self, event: Event) -> None:
        if isinstance(event, DecisionPendingEvent):
            self._asked(PendingDecision.from_event(event))
        elif isinstance(event, DecisionEvent):
            asked = self.open.get(key_of(event))
            if asked is not None and one_attempt(asked.attempt, event.attempt):
                del self.open[key_of(event)]
            self.taken.append(Decision.from_event(event))
        elif isinstance(event, RunResumedEvent):
            self.attempt += 1
        elif isinstance(event, RunEndEvent) and event.pending is not None:
            still = set(event.pending)
            for key, asked in list(self.open.items()):
                if asked.ref not in still:
                    self.passed.append(self.open.pop(key))

    def _asked(self, asked: PendingDecision) -> None:
        key = key_of(asked)
        earlier = self.open.get(key)
        if earlier is not None and earlier.attempt == asked.attempt:
            return  # recorded again (an older version wrote it on each resume): the first holds
        if earlier is not None:
            self.passed.append(self.open.pop(key))
        self.open[key] = asked

    def pending(self) -> list[PendingDecision]:
        """The open requests, in the order they became pending."""
        return sorted(self.open.values(), key=lambda p: p.since)

    def left(self, handle: str) -> Decision | PendingDecision | None:
        """What `handle` names that is no longer open: the latest decision taken for it or
        request passed by, of those it names."""
        found: list[tuple[float, Decision | PendingDecision]] = []
        found += [(d.at, d) for d in self.taken if d.matches(handle)]
        found += [(p.since, p) for p in self.passed if p.matches(handle)]
        return max(found, key=lambda pair: pair[0])[1] if found else None


def open_decisions(events: Iterable[Event]) -> list[PendingDecision]:
    """The decisions a log waits for, in the order they became pending."""
    return DecisionHistory.of(events).pending()


def pending_in_meta(meta: Mapping[str, object]) -> list[PendingDecision]:
    """run.json's `pending` list (written when the run ended waiting)."""
    raw = meta.get("pending")
    if not isinstance(raw, list):
        return []
    return [PendingDecision.from_dict(item) for item in raw if isinstance(item, Mapping)]


def handle(pending: PendingDecision, among: list[PendingDecision]) -> str:
    """What names `pending` to `--call`: its call id, or its ref when another shares the id."""
    shared = sum(1 for p in among if p.call_id == pending.call_id) > 1
    return pending.ref if shared else pending.call_id


def choose(pending: list[PendingDecision], given: str | None, run_dir: Path) -> PendingDecision:
    """The open decision `given` names (a call id or a ref); the only one when not given."""
    if not pending:
        raise UsageError(f"{run_dir} waits for no decision", "`flowrun show RUN_DIR` says how it stands")
    if given is None:
        if len(pending) == 1:
            return pending[0]
        raise UsageError(
            f"{len(pending)} decisions are pending in {run_dir}: {listing(pending)}",
            "name one with --call ID (Python: call_id=...)",
        )
    found = [p for p in pending if p.matches(given)]
    if len(found) == 1:
        return found[0]
    if found:
        refs = ", ".join(p.ref for p in found)
        raise UsageError(f"{len(found)} pending decisions have call id {given}: {refs}", "give the full ref")
    raise UsageError(f"no pending decision {given} in {run_dir}; pending: {listing(pending)}")


def listing(pending: list[PendingDecision]) -> str:
    return "; ".join(f"{handle(p, pending)} ({p.describe()})" for p in pending)


def decided(
    pending: PendingDecision,
    *,
    allow: bool | None = None,
    answer: str | None = None,
    grant: float | None = None,
    reason: str | None = None,
    by: str,
    user: str | None = None,
) -> DecisionEvent:
    """The `decision` event that answers `pending`; UsageError when the answer does not fit it
    (an approval needs allow, a question an answer, a grant is for a budget)."""
    name = pending.ref
    if pending.kind == "question":
        if allow is not None or grant is not None:
            hint = "answer it: `flowrun answer RUN --call ID TEXT`"
            raise UsageError(f"{name} is a question, not an approval", hint)
        if answer is None:
            raise UsageError(f"{name} is a question: give the answer", "`flowrun answer RUN --call ID TEXT`")
    else:
        if answer is not None:
            hint = "`flowrun approve RUN --call ID --allow` (or --deny)"
            raise UsageError(f"{name} asks for {_asked(pending)}, not an answer", hint)
        if allow is None:
            raise UsageError(f"{name} asks for {_asked(pending)}: allow or deny it", "--allow or --deny")
        if grant is not None and pending.kind != "budget":
            raise UsageError(f"--grant is for a budget decision; {name} is an approval")
        if grant is not None and not grant > 0:
            raise UsageError(f"--grant {grant:g} must be more than 0", "the amount of the limit to add")
    return DecisionEvent(
        kind=pending.kind,
        agent_id=pending.agent_id,
        call_id=pending.call_id,
        agent=pending.agent,
        allowed=bool(allow) if pending.kind != "question" else None,
        answer=answer if pending.kind == "question" else None,
        grant=_granted(pending, allow, grant),
        limit=pending.limit,
        reason=reason,
        by=by,
        user=user,
        attempt=pending.attempt,
        amount=pending.amount,
    )


def overdue(pending: list[PendingDecision], now: float | None = None) -> list[DecisionEvent]:
    """The `decision` events the deadline takes: approvals and budgets denied, questions
    left without an answer."""
    reason = "nobody decided within the deadline"
    return [
        DecisionEvent(
            kind=p.kind,
            agent_id=p.agent_id,
            call_id=p.call_id,
            agent=p.agent,
            allowed=False if p.kind != "question" else None,
            limit=p.limit,
            reason=reason,
            by="deadline",
            attempt=p.attempt,
            amount=p.amount,
        )
        for p in pending
        if p.overdue(now)
    ]


def how_to_decide(run_dir: Path | str, pending: list[PendingDecision]) -> str:
    """The commands that take the pending decisions (one line)."""
    kinds = {p.kind for p in pending}
    call = " --call ID" if len(pending) > 1 else ""
    ways = []
    if kinds & {"approval", "budget"}:
        grant = " [--grant AMOUNT]" if "budget" in kinds else ""
        ways.append(f"`flowrun approve {run_dir}{call} --allow|--deny{grant} [--reason TEXT]`")
    if "question" in kinds:
        ways.append(f"`flowrun answer {run_dir}{call} TEXT`")
    python = "flowrun.respond() and flowrun.resume()"
    return "decide with " + " or ".join(ways) + f" (it then continues), or {python}"


def waiting_message(run_dir: Path | str, pending: list[PendingDecision]) -> str:
    """run_end's message of a run that waits."""
    if not pending:
        return f"waiting for decisions; continue with `flowrun resume {run_dir}`"
    what = "a decision" if len(pending) == 1 else f"{len(pending)} decisions"
    return f"waiting for {what}: {listing(pending)}; {how_to_decide(run_dir, pending)}"


def _granted(pending: PendingDecision, allow: bool | None, grant: float | None) -> float | None:
    """What a budget decision adds to its limit: the grant given, else as much again."""
    if pending.kind != "budget" or not allow:
        return None
    return grant if grant is not None else pending.amount


def _asked(pending: PendingDecision) -> str:
    return "more budget" if pending.kind == "budget" else f"an approval of {pending.tool}"


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
