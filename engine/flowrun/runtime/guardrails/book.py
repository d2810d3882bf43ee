"""Where an agent's guardrails apply (docs: how-to/guardrails.md):

- input, before its first model call for a task: `stop` raises GuardrailFailed (the run fails;
  the caller of an agent called as a tool gets a GUARDRAIL_FAILED error), `warn` goes on;
- output, on a final answer once an `output_schema` accepted it: `retry` gives the model the
  reason as a new user message (each retry is a model call, counted in `max_steps`), up to
  `max_retries` times, then stops;
- tools, on the calls of a step before any of them runs: `retry` refuses the call with the
  reason as its result (GUARDRAIL_REFUSED), up to `max_retries` times, then stops; `stop` stops
  the agent and none of the step's calls run.

Guardrails are checked in order and the first failure that is not a warning decides (in a dry
run, whose test model answers placeholders, every failure only warns). Every
verdict is a `guardrail` event; a resumed or replayed run reuses the recorded verdict (a
judge's recorded model calls are not made again)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from flowrun.errors import GuardrailFailed
from flowrun.events import GuardrailEvent
from flowrun.manifest.guardrails.specs import (
    Guardrail,
    GuardrailBase,
    GuardrailsSpec,
    JudgeGuardrail,
    OnFail,
    PythonGuardrail,
    RegexGuardrail,
    SchemaGuardrail,
)
from flowrun.runtime.durable.ledger import Ledger
from flowrun.runtime.guardrails.judge import judge_id, judge_verdict
from flowrun.runtime.guardrails.verdicts import (
    Subject,
    Verdict,
    python_verdict,
    regex_verdict,
    schema_verdict,
)
from flowrun.runtime.loop.contracts import AgentInstance, Outcome, RunServices
from flowrun.types import Message, ToolCall, ToolResult

HINT = "the guardrail's reason says what failed; change the task, the prompt or the guardrail"


@dataclass(frozen=True, slots=True)
class Placed:
    """A guardrail with its id and what it does when it fails, where it is declared."""

    id: str
    guard: GuardrailBase
    on_fail: OnFail


def retry_message(guardrail: str, reason: str) -> str:
    """What the model reads when its answer failed a guardrail with `on_fail: retry`."""
    return f"Your answer did not pass the guardrail {guardrail}: {reason}. Answer again, corrected."


def refusal_text(guardrail: str, reason: str) -> str:
    return (
        f"not run: the guardrail {guardrail} refused this call: {reason}. Change the call or do without it."
    )


def placed(guards: Sequence[Guardrail], prefix: str, default: OnFail) -> list[Placed]:
    return [Placed(g.name or f"{prefix}[{i}]", g, g.on_fail or default) for i, g in enumerate(guards)]


class Guardrails:
    def __init__(
        self, run: RunServices, roots: dict[str, Path], ledger: Ledger | None, dry_run: bool = False
    ) -> None:
        self.run = run
        self.dry_run = dry_run  # the test model's placeholder answers: a failure only warns
        self.roots = roots  # agent name -> the folder its python checks are imported from
        self.ledger = ledger
        self.failures: dict[tuple[str, str], int] = {}  # (agent id, guardrail) -> failures this task
        self.refused: dict[tuple[str, str], str] = {}  # (agent id, call id) -> the refusal text

    @staticmethod
    def spec_of(inst: AgentInstance) -> GuardrailsSpec | None:
        spec = inst.spec.guardrails
        return spec if spec is not None and not spec.empty else None

    # ------------------------------------------------------------ the three moments

    async def check_input(self, inst: AgentInstance, task: str, value: object) -> None:
        """A new task: the retry counts start again; a failing input guardrail stops it."""
        for key in [k for k in self.failures if k[0] == inst.id]:
            del self.failures[key]
        spec = self.spec_of(inst)
        if spec is None or not spec.input:
            return
        subject = Subject("input", inst.name, task, value)
        for one in placed(spec.input, "input", "stop"):
            verdict, action = await self._verdict(inst, one, subject, f"input:{inst.model_calls}")
            if action == "stop":
                raise self._failed(inst, one, verdict)

    async def check_output(self, inst: AgentInstance, outcome: Outcome) -> str | None:
        """None: the answer passes; else the message that makes the agent answer again."""
        spec = self.spec_of(inst)
        if spec is None or not spec.output:
            return None
        subject = Subject("output", inst.name, outcome.text, outcome.data)
        for one in placed(spec.output, "output", "retry"):
            verdict, action = await self._verdict(inst, one, subject, f"output:{inst.model_calls}")
            if action == "stop":
                raise self._failed(inst, one, verdict)
            if action == "retry":
                return retry_message(one.id, verdict.reason)
        return None

    async def check_calls(self, inst: AgentInstance, calls: list[ToolCall]) -> None:
        """Before a step's calls run: refusals are kept for the dispatcher; a stop gives every call
        of the step a `not run` result in the history and raises GuardrailFailed."""
        spec = self.spec_of(inst)
        if spec is None or not spec.tools:
            return
        for call in calls:
            stop = await self._check_call(inst, spec, call)
            if stop is not None:
                for made in calls:  # every call gets its turn: the history stays well-formed
                    self.refused.pop((inst.id, made.id), None)
                    text = f"not run: {stop.message}"
                    turn = Message("tool", text, tool_call_id=made.id, name=made.name, is_error=True)
                    inst.messages.append(turn)
                raise stop

    def refusal(self, inst: AgentInstance, call_id: str) -> ToolResult | None:
        text = self.refused.pop((inst.id, call_id), None)
        return ToolResult.fail("GUARDRAIL_REFUSED", text) if text is not None else None

    async def _check_call(
        self, inst: AgentInstance, spec: GuardrailsSpec, call: ToolCall
    ) -> GuardrailFailed | None:
        text = json.dumps(call.arguments, ensure_ascii=False)
        subject = Subject("tool", inst.name, text, dict(call.arguments), call.name)
        for j, group in enumerate(spec.tools):
            if group.tools is not None and not any(fnmatchcase(call.name, name) for name in group.tools):
                continue
            for one in placed(group.check, f"tools[{j}]", "retry"):
                verdict, action = await self._verdict(inst, one, subject, f"tool:{call.id}")
                if action == "stop":
                    return self._failed(inst, one, verdict)
                if action == "retry":
                    self.refused[(inst.id, call.id)] = refusal_text(one.id, verdict.reason)
                    return None
        return None

    # ------------------------------------------------------------ one verdict

    async def _verdict(
        self, inst: AgentInstance, one: Placed, subject: Subject, moment: str
    ) -> tuple[Verdict, str]:
        """The verdict (recorded, or found now), recorded as an event, and its action."""
        recorded = self.ledger.verdict(inst.id, moment, one.id) if self.ledger is not None else None
        if recorded is not None:
            verdict = Verdict(recorded.passed, recorded.reason, recorded.judge_id)
        else:
            verdict = await self._evaluate(inst, one, subject, moment)
        action, left = self._action(inst, one, verdict, subject.where)
        event = GuardrailEvent(
            agent=inst.name,
            agent_id=inst.id,
            call_id=moment,
            guardrail=one.id,
            where=subject.where,
            kind=type(one.guard).kind,
            passed=verdict.passed,
            action=action,
            reason=verdict.reason,
            tool=subject.tool,
            retries_left=left,
            judge_id=verdict.judge_id,
            replayed=True if recorded is not None else None,
        )
        self.run.emit(event)
        return verdict, action

    def _action(
        self, inst: AgentInstance, one: Placed, verdict: Verdict, where: str
    ) -> tuple[str, int | None]:
        """What the failure does (counting it against `max_retries`), and the retries left."""
        if verdict.passed:
            return "pass", None
        if self.dry_run:
            return "warn", None
        if one.on_fail != "retry" or where == "input":
            return ("warn" if one.on_fail == "warn" else "stop"), None
        key = (inst.id, one.id)
        self.failures[key] = self.failures.get(key, 0) + 1
        left = one.guard.max_retries - self.failures[key]
        return ("retry" if left >= 0 else "stop"), max(left, 0)

    async def _evaluate(self, inst: AgentInstance, one: Placed, subject: Subject, moment: str) -> Verdict:
        guard = one.guard
        if isinstance(guard, RegexGuardrail):
            return regex_verdict(guard, subject)
        if isinstance(guard, SchemaGuardrail):
            return schema_verdict(guard, subject)
        if isinstance(guard, PythonGuardrail):
            return await python_verdict(guard, subject, self.roots.get(inst.name, Path.cwd()))
        assert isinstance(guard, JudgeGuardrail)
        return await judge_verdict(self.run, inst, guard, subject, judge_id(inst, guard, moment, one.id))

    def _failed(self, inst: AgentInstance, one: Placed, verdict: Verdict) -> GuardrailFailed:
        tried = ""
        if one.on_fail == "retry" and one.guard.max_retries:
            tried = f" after {one.guard.max_retries} retr{'y' if one.guard.max_retries == 1 else 'ies'}"
        message = f"agent '{inst.name}' stopped: guardrail {one.id} failed{tried}: {verdict.reason}"
        return GuardrailFailed(message, HINT, agent=inst.name, guardrail=one.id)
