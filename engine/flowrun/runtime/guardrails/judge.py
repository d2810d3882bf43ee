"""A judge agent's verdict: another agent of the workflow, run as a sub-agent of the agent it
judges (its model calls and usage count like any), given the text and answering the structured
verdict {pass, reason} as its output schema."""

from __future__ import annotations

import re

from flowrun.errors import GuardrailFailed, HookBlocked, OutputInvalid
from flowrun.events import AgentEndEvent, AgentStartEvent
from flowrun.manifest.guardrails.specs import JudgeGuardrail
from flowrun.runtime.guardrails.verdicts import Subject, Verdict, read_verdict
from flowrun.runtime.loop.contracts import AgentInstance, RunServices

VERDICT_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "pass": {"type": "boolean", "description": "true when the text passes"},
        "reason": {"type": "string", "description": "why, in one or two sentences"},
    },
    "required": ["pass", "reason"],
    "additionalProperties": False,
}
WHAT = {"input": "task given to", "output": "final answer of", "tool": "tool call made by"}


def judge_task(guard: JudgeGuardrail, subject: Subject) -> str:
    what = WHAT[subject.where]
    lines = [f"Judge the {what} the agent '{subject.agent}' below."]
    if guard.criteria:
        lines.append(f"Criteria: {guard.criteria.strip()}")
    lines.append('Answer with a JSON object {"pass": true or false, "reason": "why"}.')
    label = f"tool call: {subject.tool}" if subject.tool else subject.where
    return "\n".join(lines) + f"\n\n--- {label} ---\n{subject.text}\n--- end ---"


def judge_id(inst: AgentInstance, guard: JudgeGuardrail, moment: str, guard_id: str) -> str:
    """A deterministic instance id (its model calls are recorded under it), e.g.
    `writer/reviewer@guard-output-1-output-0`."""
    tag = re.sub(r"[^A-Za-z0-9_-]+", "-", f"{moment}-{guard_id}").strip("-")
    return f"{inst.id}/{guard.judge}@guard-{tag}"


async def judge_verdict(
    run: RunServices, inst: AgentInstance, guard: JudgeGuardrail, subject: Subject, instance_id: str
) -> Verdict:
    from flowrun.runtime.loop.agent import run_agent

    name = guard.judge
    if name not in run.project.agents:
        return Verdict(False, f"the judge agent '{name}' does not exist")
    if inst.depth + 1 > run.limits.max_depth:
        deepest = run.limits.max_depth
        return Verdict(False, f"the judge '{name}' cannot run: agents may nest at most {deepest} deep")
    if name in (segment.split("@")[0] for segment in inst.id.split("/")):
        return Verdict(False, f"the judge '{name}' is already running above {inst.name}")
    judge = run.new_instance(name, instance_id, inst.depth + 1)
    judge.output_schema = dict(VERDICT_SCHEMA)
    judge.tree = run.subtrees.open(name, judge.id, None, inst.tree)
    task = judge_task(guard, subject)
    run.emit(
        AgentStartEvent(agent=name, agent_id=judge.id, parent=inst.id, task=task, model=judge.model.name)
    )
    try:
        outcome = await run_agent(run, judge, task)
    except (OutputInvalid, GuardrailFailed, HookBlocked) as e:
        run.emit(AgentEndEvent(agent=name, agent_id=judge.id, status="failed", error=e.message))
        return Verdict(False, f"the judge '{name}' gave no verdict: {e.message}", judge.id)
    run.emit(AgentEndEvent(agent=name, agent_id=judge.id, status=outcome.status, steps=outcome.steps))
    if outcome.data is None:
        return Verdict(False, f"the judge '{name}' gave no verdict ({outcome.status})", judge.id)
    found = read_verdict(outcome.data, f"the judge '{name}'")
    return Verdict(found.passed, found.reason, judge.id)
